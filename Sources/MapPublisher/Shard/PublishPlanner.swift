import Foundation
import MapModel
import MapPlatform

/// Makes a ``PublishPlan``: reads and checks the release, hashes every group's files,
/// finds what earlier versions already published (archives to reuse, patch edges to
/// keep) and lists the tasks for the rest.
package enum PublishPlanner {
    /// The plan of publishing `release` into `site` as `options.version`.
    package static func plan(release: URL, site siteURL: URL, options: PublishOptions) throws -> PublishPlan {
        guard options.version.range(of: #"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"#, options: .regularExpression) != nil else {
            throw PublishError("version label '\(options.version)' is malformed: use letters, digits, '.', '-' and '_'")
        }
        try options.validate()
        if let keyFile = options.keyFile { _ = try SigningKeyFile.publicKey(of: keyFile) }
        let reader = ReleaseReader(root: release)
        let tree = try reader.read()
        if !options.allowHardLinks { try reader.refuseOutsideHardLinks() }
        let site = SiteWriter(root: siteURL)
        let previousCatalog = try site.catalog()
        // A plan made without the key (which may live only where assembly runs) is checked
        // for signing continuity at assembly.
        if options.keyFile != nil || options.unsigned {
            try Publisher.checkSigningContinuity(
                site: site, keyFile: options.keyFile, rekey: options.rekey,
                unsigned: options.unsigned)
        }
        if previousCatalog?.entry(options.version) != nil {
            throw PublishError("version \(options.version) is already published on \(siteURL.path): pick a new label")
        }
        let history = PublishedHistory(manifests: try (previousCatalog?.versions ?? []).map { try site.manifest($0) })
        let published = Date(timeIntervalSince1970: (options.published ?? Date()).timeIntervalSince1970.rounded(.down))

        var units: [PublishPlan.Unit] = []
        var tasks: [PublishPlan.Task] = []
        for leaf in tree.root.leaves {
            for group in tree.groups {
                let folder = reader.groupFolder(leaf.id, group.id)
                guard reader.isDirectory(folder) else { continue }
                units.append(
                    try unit(
                        package: leaf.id, group: group.id, folder: folder, history: history, site: site, options: options,
                        tasks: &tasks))
            }
        }
        return PublishPlan(
            planFormat: PublishPlan.currentFormat, version: options.version,
            serial: (previousCatalog?.serial ?? 0) + 1, baseCatalog: site.catalogHash(),
            published: published, format: options.format, level: options.level,
            validity: options.validity, manifestPartLeaves: options.manifestPartLeaves,
            segmentLength: options.segmentLength, patchLevel: options.patchLevel, lzma: options.lzma,
            zstdFrames: options.zstdFrames ? true : nil,
            release: release.standardizedFileURL.path,
            site: siteURL.standardizedFileURL.path, groups: tree.groups, root: tree.root,
            units: units, tasks: tasks)
    }

    /// One group of one package in the plan: reused as published before where its tree is,
    /// else an archive task; the edges into its tree kept while their blobs are on the
    /// site; a patch task from each of the last ``PublishOptions/patchDepth`` versions
    /// whose tree differs (appended to `tasks`).
    private static func unit(
        package: String, group: String, folder: URL, history: PublishedHistory, site: SiteWriter, options: PublishOptions,
        tasks: inout [PublishPlan.Task]
    ) throws -> PublishPlan.Unit {
        let entries = try ReleaseReader.entries(of: package, group, in: folder)
        let treeHash = TreeHash.of(entries)
        var unit = PublishPlan.Unit(
            package: package, group: group, treeHash: treeHash, reused: nil,
            keptEdges: [], archiveTask: nil, patchTasks: [])
        unit.reused = history.reusable(treeHash: treeHash, format: options.format, group: group) {
            FileManager.default.fileExists(atPath: site.blob($0.sha256).path)
        }
        if unit.reused == nil {
            unit.archiveTask = tasks.count
            tasks.append(
                .init(
                    id: tasks.count, kind: .archive, package: package, group: group,
                    treeHash: treeHash))
        }
        // Edges published before into this tree (the group did not change since) stay
        // usable while their blobs are on the site. Edges into older trees stay in the
        // manifests of their versions, where a device far behind reads them: a
        // manifest stays the same size however many versions the site keeps.
        var seen = Set<String>()
        for manifest in history.manifests.indices {
            for edge in history.artifact(package, group, inVersion: manifest)?.patches ?? []
            where edge.toTreeHash == treeHash && seen.insert(edge.fromTreeHash + edge.toTreeHash).inserted {
                if FileManager.default.fileExists(atPath: site.blob(edge.sha256).path) { unit.keptEdges.append(edge) }
            }
        }
        for index in history.manifests.indices.suffix(options.patchDepth).reversed() {
            guard let old = history.artifact(package, group, inVersion: index), old.treeHash != treeHash,
                seen.insert(old.treeHash + treeHash).inserted
            else { continue }
            var from = old
            from.patches = nil
            unit.patchTasks.append(tasks.count)
            tasks.append(
                .init(
                    id: tasks.count, kind: .patch, package: package, group: group,
                    treeHash: treeHash, fromVersion: history.manifests[index].version,
                    fromArtifact: from))
        }
        return unit
    }
}

/// The manifests a site already published, indexed by package so that a 10,000-leaf
/// catalog is searched in constant time per group rather than by a walk of every tree.
struct PublishedHistory {
    /// Oldest first, as the catalog lists them.
    let manifests: [Manifest]
    private let leaves: [[String: PackageNode]]
    private let byTree: [String: Artifact]

    init(manifests: [Manifest]) {
        self.manifests = manifests
        leaves = manifests.map { manifest in
            Dictionary(manifest.root.leaves.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        }
        var byTree: [String: Artifact] = [:]
        for manifest in manifests {
            for leaf in manifest.root.leaves {
                for (group, artifact) in leaf.artifacts ?? [:] {
                    var copy = artifact
                    copy.patches = nil
                    // Later versions win, as the newest copy of a tree is the likeliest kept.
                    byTree[Self.key(group, artifact.treeHash, artifact.format)] = copy
                }
            }
        }
        self.byTree = byTree
    }

    /// The artifact of `package`/`group` in the manifest at `index`.
    func artifact(_ package: String, _ group: String, inVersion index: Int) -> Artifact? {
        leaves[index][package]?.artifacts?[group]
    }

    /// An earlier archive of the same files and format whose blob is still on the site.
    func reusable(
        treeHash: String, format: ArchiveFormat, group: String,
        present: (Artifact) -> Bool
    ) -> Artifact? {
        if let artifact = byTree[Self.key(group, treeHash, format)], present(artifact) { return artifact }
        return nil
    }

    private static func key(_ group: String, _ treeHash: String, _ format: ArchiveFormat) -> String {
        "\(group) \(treeHash) \(format.rawValue)"
    }
}
