import Foundation
import MapDelta
import MapModel
import MapPlatform

/// Turns release folders into a static site any HTTP server can host.
///
/// Each group's files become a deterministic archive stored under its SHA-256; a group
/// whose files did not change since an earlier version reuses that version's blob, so
/// clients update it for zero bytes. The new manifest and catalog are written last, so
/// a client never sees a manifest naming a blob that is not there yet.
package enum Publisher {
    /// Publishes the release folder `release` into `site` as `options.version` and makes
    /// it current. `log` receives one line per group.
    @discardableResult
    package static func publish(release: URL, site siteURL: URL, options: PublishOptions,
                               log: (String) -> Void = { _ in }) throws -> PublishReport {
        guard options.version.range(of: #"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"#, options: .regularExpression) != nil else {
            throw PublishError("version label '\(options.version)' is malformed: use letters, digits, '.', '-' and '_'")
        }
        try options.validate()
        if let keyFile = options.keyFile { _ = try SigningKeyFile.publicKey(of: keyFile) }
        let reader = ReleaseReader(root: release)
        let tree = try reader.read()
        let site = SiteWriter(root: siteURL)
        let previousCatalog = try site.catalog()
        try checkSigningContinuity(site: site, keyFile: options.keyFile, rekey: options.rekey, unsigned: options.unsigned)
        if previousCatalog?.entry(options.version) != nil {
            throw PublishError("version \(options.version) is already published on \(siteURL.path): pick a new label")
        }
        let previous = try (previousCatalog?.versions ?? []).map { try site.manifest($0) }
        try site.prepare()
        defer { site.cleanUp() }

        var report = PublishReport(version: options.version, serial: (previousCatalog?.serial ?? 0) + 1, packages: 0,
                                   groups: 0, newArchives: 0, reusedArchives: 0, patches: 0, bytesWritten: 0, fullBytes: 0)
        var patcher = PatchPublisher(site: site, previous: previous, depth: options.patchDepth, version: options.version)
        let root = try publishNode(tree.root, groups: tree.groups, reader: reader, site: site, options: options,
                                   previous: previous, patcher: &patcher, report: &report, log: log)
        let manifest = Manifest(version: options.version, groups: tree.groups, root: root)
        let manifestData = try manifest.encoded()
        let manifestPath = SiteLayout.manifest(options.version)
        try site.write(manifestData, at: manifestPath)

        let now = Date()
        var entries = previousCatalog?.versions ?? []
        entries.append(Catalog.Entry(version: options.version, published: now, manifest: manifestPath,
                                     sha256: FileHashing.sha256(of: manifestData), size: Int64(manifestData.count)))
        let catalog = Catalog(serial: report.serial, current: options.version,
                              expires: options.validity.map { now.addingTimeInterval($0) }, versions: entries)
        try writeCatalog(catalog, site: site, keyFile: options.keyFile)
        return report
    }

    /// Re-signs a site's catalog with a new serial and expiry, without a new version (for
    /// publishers whose catalog is about to expire).
    @discardableResult
    package static func resign(site siteURL: URL, keyFile: URL, validity: TimeInterval?, rekey: Bool = false) throws -> Catalog {
        let site = SiteWriter(root: siteURL)
        guard var catalog = try site.catalog() else { throw PublishError("\(siteURL.path) has no catalog.json to sign") }
        try checkSigningContinuity(site: site, keyFile: keyFile, rekey: rekey, unsigned: false)
        try site.prepare()
        defer { site.cleanUp() }
        catalog.serial += 1
        catalog.expires = validity.map { Date().addingTimeInterval($0) }
        try writeCatalog(catalog, site: site, keyFile: keyFile)
        return catalog
    }

    /// A site signed with one key stays signed with it: clients that trust it refuse
    /// anything else. Another key needs `rekey`, no key needs `unsigned`.
    static func checkSigningContinuity(site: SiteWriter, keyFile: URL?, rekey: Bool, unsigned: Bool) throws {
        let file = site.root.appendingPathComponent(SiteLayout.catalogSignature)
        guard let data = try? Data(contentsOf: file) else { return }
        guard let existing = try? JSONCoding.decode(CatalogSignature.self, from: data) else {
            throw PublishError("\(file.path) is unreadable: restore it, or remove it to publish as if the site were new")
        }
        let signedBy = existing.signatures.map(\.keyid)
        guard let keyFile else {
            if unsigned { return }
            throw PublishError("\(site.root.path) is signed (key \(signedBy.joined(separator: ", "))): pass --key with that key file; publishing it unsigned makes every client that trusts it refuse it (--unsigned does so anyway)")
        }
        let key = try SigningKeyFile.publicKey(of: keyFile)
        if signedBy.contains(key.id) || rekey { return }
        throw PublishError("\(site.root.path) is signed with key \(signedBy.joined(separator: ", ")), not with \(keyFile.path) (key \(key.id)): clients that trust the old key would refuse the site; use the old key file, or pass --rekey and give clients the new public key")
    }

    /// Writes the signature first, then the catalog: a client that reads the new catalog
    /// with the old signature refuses it and retries later, never accepts a wrong one.
    static func writeCatalog(_ catalog: Catalog, site: SiteWriter, keyFile: URL?) throws {
        let data = try catalog.jsonData()
        if let keyFile {
            try site.write(try SigningKeyFile.sign(data, keyFile: keyFile).jsonData(), at: SiteLayout.catalogSignature)
        } else {
            try? FileManager.default.removeItem(at: site.root.appendingPathComponent(SiteLayout.catalogSignature))
        }
        try site.write(data, at: SiteLayout.catalog)
    }

    private static func publishNode(_ node: PackageNode, groups: [DataGroup], reader: ReleaseReader, site: SiteWriter,
                                    options: PublishOptions, previous: [Manifest], patcher: inout PatchPublisher,
                                    report: inout PublishReport, log: (String) -> Void) throws -> PackageNode {
        var node = node
        if let children = node.children {
            node.children = try children.map {
                try publishNode($0, groups: groups, reader: reader, site: site, options: options, previous: previous,
                                patcher: &patcher, report: &report, log: log)
            }
            return node
        }
        report.packages += 1
        var artifacts: [String: Artifact] = [:]
        for group in groups {
            let folder = reader.groupFolder(node.id, group.id)
            guard reader.isDirectory(folder) else { continue }
            let entries: [FileEntry]
            do {
                entries = try FileTree.entries(in: folder)
            } catch {
                throw PublishError("data/\(node.id)/\(group.id): \(error)")
            }
            if let bad = entries.first(where: { RelativePath.normalized($0.path).map { Array($0.utf8) } != Array($0.path.utf8) }) {
                throw PublishError("data/\(node.id)/\(group.id)/\(bad.path): clients refuse this name (a backslash, a NUL, or a part longer than 255 bytes); rename the file")
            }
            let treeHash = TreeHash.of(entries)
            var artifact: Artifact
            if let reused = reusable(treeHash: treeHash, format: options.format, package: node.id, group: group.id,
                                     previous: previous, site: site) {
                artifact = reused
                report.reusedArchives += 1
                log("\(node.id)/\(group.id): unchanged, reusing \(ByteFormat.string(artifact.size)) archive")
            } else {
                let temporary = site.temporaryFile("." + options.format.rawValue)
                do {
                    try ArchiveWriter.write(root: folder, files: entries.map { ($0.path, $0.size) }, to: temporary,
                                            format: options.format, level: options.level)
                } catch {
                    throw PublishError("data/\(node.id)/\(group.id): \(error)")
                }
                let blob = try site.storeBlob(temporary)
                artifact = Artifact(sha256: blob.sha256, size: blob.size, format: options.format,
                                    unpackedSize: entries.reduce(0) { $0 + $1.size }, files: entries.count,
                                    treeHash: treeHash)
                if blob.isNew {
                    report.newArchives += 1
                    report.bytesWritten += blob.size
                }
                log("\(node.id)/\(group.id): \(entries.count) files, \(ByteFormat.string(artifact.unpackedSize)) → \(ByteFormat.string(blob.size)) archive")
            }
            artifact.patches = try patcher.edges(for: node.id, group: group.id, newTree: folder, artifact: artifact,
                                                 report: &report, log: log)
            report.groups += 1
            report.fullBytes += artifact.size
            artifacts[group.id] = artifact
        }
        node.artifacts = artifacts
        return node
    }

    /// An earlier version's artifact with the same files and format whose blob is still on the site.
    private static func reusable(treeHash: String, format: ArchiveFormat, package: String, group: String,
                                 previous: [Manifest], site: SiteWriter) -> Artifact? {
        for manifest in previous.reversed() {
            for leaf in manifest.root.leaves {
                guard let artifact = leaf.artifacts?[group], artifact.treeHash == treeHash, artifact.format == format,
                      FileManager.default.fileExists(atPath: site.blob(artifact.sha256).path) else { continue }
                var copy = artifact
                copy.patches = nil
                return copy
            }
        }
        return nil
    }
}
