import Foundation
import MapDelta
import MapModel
import MapStore
import MapPlatform

/// Chooses and writes the patch edges that reach each group's new tree.
///
/// For a group whose files changed, it writes one patch from each distinct tree of the
/// `depth` previous versions (most recent first) and keeps every edge that earlier
/// versions published, so a client can take a direct edge (v1→v3) or a chain
/// (v1→v2→v3), whichever is cheaper. A patch that is not smaller than the full archive
/// is not published. Old trees are unpacked from the site's own archives, once each.
struct PatchPublisher {
    let site: SiteWriter
    let previous: [Manifest]
    let depth: Int
    let version: String
    private var unpacked: [String: URL] = [:]

    init(site: SiteWriter, previous: [Manifest], depth: Int, version: String) {
        self.site = site
        self.previous = previous
        self.depth = depth
        self.version = version
    }

    /// The edges to list on `artifact` (the new tree of `package`/`group`), or `nil` for none.
    mutating func edges(for package: String, group: String, newTree: URL, artifact: Artifact,
                        report: inout PublishReport, log: (String) -> Void) throws -> [PatchEdge]? {
        var edges: [PatchEdge] = []
        var seen = Set<String>()
        // Edges published before stay usable while their blobs are on the site.
        for manifest in previous {
            let old = manifest.root.leaves.first { $0.id == package }?.artifacts?[group]
            for edge in old?.patches ?? [] where seen.insert(edge.fromTreeHash + edge.toTreeHash).inserted {
                if FileManager.default.fileExists(atPath: site.blob(edge.sha256).path) { edges.append(edge) }
            }
        }
        for manifest in previous.suffix(depth).reversed() {
            guard let old = manifest.root.leaves.first(where: { $0.id == package })?.artifacts?[group],
                  old.treeHash != artifact.treeHash,
                  seen.insert(old.treeHash + artifact.treeHash).inserted else { continue }
            let oldTree = try unpack(old, what: "\(package)/\(group) of \(manifest.version)")
            let output = site.temporaryFile(".patch")
            let stats: PatchStats
            do {
                stats = try PatchBuilder.build(from: oldTree, to: newTree, output: output)
            } catch {
                throw PublishError("cannot build the patch \(package)/\(group) \(manifest.version)→\(version): \(error)")
            }
            guard stats.patchBytes < artifact.size else {
                try? FileManager.default.removeItem(at: output)
                log("\(package)/\(group): patch from \(manifest.version) (\(ByteFormat.string(stats.patchBytes))) is not smaller than the archive; not published")
                continue
            }
            let blob = try site.storeBlob(output)
            if blob.isNew {
                report.patches += 1
                report.bytesWritten += blob.size
            }
            edges.append(PatchEdge(from: manifest.version, to: version, sha256: blob.sha256, size: blob.size,
                                   fromTreeHash: old.treeHash, toTreeHash: artifact.treeHash))
            log("\(package)/\(group): patch \(manifest.version)→\(version) \(ByteFormat.string(blob.size)) (archive \(ByteFormat.string(artifact.size)))")
        }
        return edges.isEmpty ? nil : edges
    }

    /// The unpacked files of an earlier artifact, extracted from its blob once per publish.
    private mutating func unpack(_ artifact: Artifact, what: String) throws -> URL {
        if let folder = unpacked[artifact.treeHash] { return folder }
        let folder = site.temporaryFile("-tree")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let files: [FileEntry]
        do {
            files = try ArchiveExtractor.extract(site.blob(artifact.sha256), into: folder,
                                                 limits: .init(files: artifact.files, bytes: artifact.unpackedSize))
        } catch {
            throw PublishError("cannot unpack the published archive of \(what) to diff against: \(error)")
        }
        guard TreeHash.of(files) == artifact.treeHash else {
            throw PublishError("the published archive of \(what) does not match its manifest; the site is damaged")
        }
        unpacked[artifact.treeHash] = folder
        return folder
    }
}
