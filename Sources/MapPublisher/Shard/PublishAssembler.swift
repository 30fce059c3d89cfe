import Foundation
import MapModel
import MapPlatform

/// The last step of a publish: once every task of the plan has left its result, checks
/// each output against its recorded SHA-256, moves the patches worth publishing into
/// `blobs/`, and writes the manifest, then the signed catalog. Nothing a client reads
/// changes before every file the new catalog names is in place.
package enum PublishAssembler {
    /// Assembles `plan` in `siteURL` (default: the plan's site), signing with `keyFile`.
    @discardableResult
    package static func assemble(
        _ plan: PublishPlan, site siteURL: URL? = nil, keyFile: URL?, rekey: Bool = false,
        unsigned: Bool = false, log: (String) -> Void = { _ in }
    ) throws -> PublishReport {
        let site = SiteWriter(root: siteURL ?? URL(fileURLWithPath: plan.site))
        try Publisher.checkSigningContinuity(site: site, keyFile: keyFile, rekey: rekey, unsigned: unsigned)
        guard site.catalogHash() == plan.baseCatalog else {
            throw PublishError(
                "the catalog of \(site.root.path) changed since the plan of \(plan.version) was made (another publish?): make a new plan and run its tasks"
            )
        }
        let previousCatalog = try site.catalog()
        if previousCatalog?.entry(plan.version) != nil {
            throw PublishError("version \(plan.version) is already published on \(site.root.path)")
        }
        let results = try finishedResults(plan, site: site)
        try site.prepare()
        defer { site.cleanUp() }

        var report = PublishReport(
            version: plan.version, serial: plan.serial, packages: plan.root.leaves.count,
            groups: plan.units.count, newArchives: 0, reusedArchives: 0, patches: 0,
            bytesWritten: 0, fullBytes: 0)
        var artifacts: [String: [String: Artifact]] = [:]
        for unit in plan.units {
            var artifact: Artifact
            if let reused = unit.reused {
                artifact = reused
                report.reusedArchives += 1
                log("\(unit.package)/\(unit.group): unchanged, reusing \(ByteFormat.string(reused.size)) archive")
            } else if let task = unit.archiveTask, let result = results[task] {
                artifact = Artifact(
                    sha256: result.sha256, size: result.size, format: plan.format,
                    unpackedSize: result.unpackedSize ?? 0, files: result.files ?? 0,
                    treeHash: unit.treeHash)
                report.newArchives += 1
                report.bytesWritten += result.size
            } else {
                throw PublishError("the plan of \(plan.version) gives \(unit.package)/\(unit.group) neither an archive nor a task; make a new plan")
            }
            var edges = unit.keptEdges
            for id in unit.patchTasks {
                guard let result = results[id], let from = plan.tasks[id].fromArtifact,
                    let fromVersion = plan.tasks[id].fromVersion
                else { continue }
                guard result.size < artifact.size else {
                    log(
                        "\(unit.package)/\(unit.group): patch from \(fromVersion) (\(ByteFormat.string(result.size))) is not smaller than the archive; not published"
                    )
                    continue
                }
                let staged = site.stagedPatch(id, version: plan.version)
                let blob =
                    FileStatus.of(staged.path) == nil  // moved by an assembly that failed later
                    ? (sha256: result.sha256, size: result.size, isNew: false) : try site.storeBlob(staged)
                if blob.isNew {
                    report.patches += 1
                    report.bytesWritten += blob.size
                }
                var edge = PatchEdge(
                    from: fromVersion, to: plan.version, sha256: blob.sha256, size: blob.size,
                    fromTreeHash: from.treeHash, toTreeHash: unit.treeHash)
                edge.notes = result.notes
                edge.writeBytes = result.writeBytes
                edge.cloneWriteBytes = result.cloneWriteBytes
                edge.codecs = result.codecs
                edges.append(edge)
            }
            artifact.patches = edges.isEmpty ? nil : edges
            report.fullBytes += artifact.size
            artifacts[unit.package, default: [:]][unit.group] = artifact
        }

        let manifest = Manifest(version: plan.version, groups: plan.groups, root: attach(artifacts, to: plan.root))
        // A large tree is published as a small index plus parts, so that a client fetches
        // the parts holding what it has installed, not the whole catalog, on each update.
        let (index, parts) = try manifest.split(maxLeaves: plan.manifestPartLeaves)
        for part in parts {
            let path = SiteLayout.blob(FileHashing.sha256(of: part))
            if FileStatus.of(site.root.appendingPathComponent(path).path) == nil { try site.write(part, at: path) }
        }
        let json = try index.jsonData(pretty: false)
        let manifestData = try index.encoded()
        let manifestPath = SiteLayout.manifest(plan.version)
        try ManifestDeltas.write(json: json, packedSize: manifestData.count, previous: previousCatalog, site: site)
        try site.write(manifestData, at: manifestPath)
        var entries = previousCatalog?.versions ?? []
        entries.append(
            Catalog.Entry(
                version: plan.version, published: plan.published, manifest: manifestPath,
                sha256: FileHashing.sha256(of: manifestData), size: Int64(manifestData.count),
                unpacked: FilePin(sha256: FileHashing.sha256(of: json), size: Int64(json.count))))
        let catalog = Catalog(
            serial: plan.serial, current: plan.version,
            expires: plan.validity.map { plan.published.addingTimeInterval($0) }, versions: entries)
        try Publisher.writeCatalog(catalog, site: site, keyFile: keyFile)
        site.removeStaging(plan.version)
        return report
    }

    /// Every task's result, each output checked against it; refuses with the list of
    /// tasks still to run.
    private static func finishedResults(_ plan: PublishPlan, site: SiteWriter) throws -> [Int: PublishTaskResult] {
        var results: [Int: PublishTaskResult] = [:]
        var missing: [Int] = []
        for task in plan.tasks {
            guard
                let result = try? JSONCoding.decode(
                    PublishTaskResult.self,
                    from: Data(contentsOf: site.taskResult(task.id, version: plan.version))),
                let output = PublishTaskRunner.output(of: task, plan: plan, site: site, result: result)
            else {
                missing.append(task.id)
                continue
            }
            guard PublishTaskRunner.isIntact(output, result) else {
                throw PublishError(
                    "the output of task \(task.id) (\(task.label)) is damaged: \(output.path) does not match its result; run the task again")
            }
            results[task.id] = result
        }
        guard missing.isEmpty else {
            let shown = missing.prefix(10).map(String.init).joined(separator: ", ") + (missing.count > 10 ? ", …" : "")
            throw PublishError(
                "\(missing.count) of the \(plan.tasks.count) tasks of \(plan.version) have not finished (\(shown)): run them with 'maploader shard run', then assemble again"
            )
        }
        return results
    }

    /// The release tree with each leaf's artifacts.
    private static func attach(_ artifacts: [String: [String: Artifact]], to node: PackageNode) -> PackageNode {
        var node = node
        if let children = node.children {
            node.children = children.map { attach(artifacts, to: $0) }
        } else {
            node.artifacts = artifacts[node.id] ?? [:]
        }
        return node
    }
}
