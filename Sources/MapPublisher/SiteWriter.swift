import Foundation
import MapDelta
import MapModel
import MapPlatform

/// Reads and writes a site folder: catalog, manifests and content-addressed blobs.
/// Every file lands by write-to-temporary then rename, so a server never serves half a file.
struct SiteWriter {
    let root: URL
    /// This writer's own temporary folder inside the site (same file system, so finished
    /// files move into place by rename). Each writer has its own: workers of a sharded
    /// publish share a site, and one finishing must not remove another's files.
    let scratch: URL

    init(root: URL) {
        self.root = root
        scratch = root.appendingPathComponent(".publish-tmp").appendingPathComponent(UUID().uuidString)
    }

    func prepare() throws {
        // Another writer that finished may remove the empty shared parent between the two
        // mkdirs: try again (it only removes an empty folder, never another's files).
        for attempt in 1...3 {
            do {
                return try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            } catch  where attempt < 3 {
                continue
            }
        }
    }

    /// The SHA-256 of `catalog.json` as it is now, or `nil` when the site has none.
    func catalogHash() -> String? {
        (try? Data(contentsOf: root.appendingPathComponent(SiteLayout.catalog))).map(FileHashing.sha256(of:))
    }

    /// Removes this writer's scratch folder, and the shared parent when no other writer
    /// has one there.
    func cleanUp() {
        try? FileManager.default.removeItem(at: scratch)
        FileSystem.removeIfEmptyFolder(scratch.deletingLastPathComponent().path)
    }

    /// Removes this writer's scratch folder only (a task: other tasks of the same publish
    /// are working beside it).
    func cleanUpOwn() {
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Removes the staging folder of `version` after assembly, and its parent when empty.
    func removeStaging(_ version: String) {
        try? FileManager.default.removeItem(at: staging(version))
        FileSystem.removeIfEmptyFolder(staging(version).deletingLastPathComponent().path)
    }

    /// The current catalog, or `nil` for a new site.
    func catalog() throws -> Catalog? {
        let file = root.appendingPathComponent(SiteLayout.catalog)
        guard let data = try? Data(contentsOf: file) else { return nil }
        do {
            return try JSONCoding.decode(Catalog.self, from: data)
        } catch {
            throw PublishError("\(file.path) is unreadable (\(error)); restore it from a backup")
        }
    }

    /// The whole manifest of a catalog entry, its parts read from the site when it is split.
    func manifest(_ entry: Catalog.Entry) throws -> Manifest {
        let file = root.appendingPathComponent(entry.manifest)
        var manifest: Manifest
        do {
            manifest = try Manifest.decode(Data(contentsOf: file))
        } catch {
            throw PublishError("\(file.path) is unreadable (\(error)); restore it from a backup")
        }
        var parts: [String: PackageNode] = [:]
        for stub in manifest.stubs {
            let part = blob(stub.part!.sha256)
            do {
                parts[stub.id] = try Manifest.decodePart(Data(contentsOf: part))
            } catch {
                throw PublishError("\(part.path), the part '\(stub.id)' of \(file.path), is unreadable (\(error)); restore it from a backup")
            }
        }
        manifest.root = manifest.root.replacingStubs(parts)
        return manifest
    }

    /// The site paths of a catalog entry's manifest parts (none when it is not split).
    func partPaths(_ entry: Catalog.Entry) throws -> [String] {
        let file = root.appendingPathComponent(entry.manifest)
        do {
            return try Manifest.decode(Data(contentsOf: file)).stubs.map { SiteLayout.blob($0.part!.sha256) }
        } catch {
            throw PublishError("\(file.path) is unreadable (\(error)); restore it from a backup")
        }
    }

    /// The blob file for `sha256`.
    func blob(_ sha256: String) -> URL { root.appendingPathComponent(SiteLayout.blob(sha256)) }

    /// Moves a finished temporary file into `blobs/` under its hash; returns hash, size and
    /// whether the blob was new.
    func storeBlob(_ file: URL) throws -> (sha256: String, size: Int64, isNew: Bool) {
        let (sha256, size) = try FileHashing.sha256(ofFileAt: file)
        let target = blob(sha256)
        if FileManager.default.fileExists(atPath: target.path) {
            try FileManager.default.removeItem(at: file)
            return (sha256, size, false)
        }
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        // rename(2) replaces atomically: two workers storing the same blob at once both
        // succeed, and the bytes are the same.
        do {
            try FileSystem.rename(file.path, target.path)
        } catch {
            throw PublishError("cannot store \(target.path): \(error.reason)")
        }
        return (sha256, size, true)
    }

    /// The folder where the tasks of `version`'s plan leave their results and staged
    /// patches until assembly (never uploaded: `publish-s3.sh` copies blobs, versions and
    /// the catalog only).
    func staging(_ version: String) -> URL {
        root.appendingPathComponent(".publish").appendingPathComponent(version)
    }

    /// The result record of a task.
    func taskResult(_ task: Int, version: String) -> URL {
        staging(version).appendingPathComponent(String(format: "task-%06d.json", task))
    }

    /// Where a patch task leaves its patch until assembly decides to publish it.
    func stagedPatch(_ task: Int, version: String) -> URL {
        staging(version).appendingPathComponent(String(format: "task-%06d.patch", task))
    }

    /// Writes `data` at site-relative `path` atomically.
    func write(_ data: Data, at path: String) throws {
        try write(data, to: root.appendingPathComponent(path))
    }

    /// Writes `data` at `target` (inside the site) atomically.
    func write(_ data: Data, to target: URL) throws {
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        let temporary = scratch.appendingPathComponent(UUID().uuidString)
        try data.write(to: temporary)
        do {
            try FileSystem.rename(temporary.path, target.path)
        } catch {
            throw PublishError("cannot write \(target.path): \(error.reason)")
        }
    }

    /// A fresh temporary file path in the scratch folder.
    func temporaryFile(_ suffix: String = "") -> URL {
        scratch.appendingPathComponent(UUID().uuidString + suffix)
    }
}
