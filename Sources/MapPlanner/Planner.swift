package import MapModel

/// Turns (installed state, target manifest, wanted packages, selected groups) into a
/// ``Plan``. Pure: no I/O, so it is tested with tables.
package enum Planner {
    /// The plan that re-fetches, in full at the installed version, every installed group
    /// in `broken` (with what is wrong with it) and keeps the others. Throws when the
    /// manifest no longer has an archive of a broken group's installed files.
    package static func repair(
        installed state: InstalledState, manifest: Manifest,
        broken: [GroupKey: String]
    ) throws(MapLoaderError) -> Plan {
        let leaves = Dictionary(manifest.root.leaves.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        var steps: [GroupStep] = []
        for (package, groups) in state.packages.sorted(by: { $0.key < $1.key }) {
            for (group, installed) in groups.sorted(by: { $0.key < $1.key }) {
                let artifact = leaves[package]?.artifacts?[group]
                guard let detail = broken[GroupKey(package, group)] else {
                    steps.append(
                        GroupStep(
                            package: package, group: group, action: .keep, method: .none,
                            reason: "verified", artifact: artifact))
                    continue
                }
                guard let artifact, artifact.treeHash == installed.treeHash else {
                    throw .invalidMetadata(
                        what: "\(package)/\(group)",
                        detail: "the site has no archive of the installed files; update instead")
                }
                steps.append(
                    GroupStep(
                        package: package, group: group, action: .update, method: .full,
                        downloadBytes: artifact.size, fullBytes: artifact.size,
                        writeBytes: diskBytes(artifact), reason: "repair: \(detail)", artifact: artifact))
            }
        }
        return Plan(version: manifest.version, steps: steps)
    }

    /// The plan that removes the installed `leaves` and keeps every other installed group.
    package static func removal(of leaves: Set<String>, from state: InstalledState) -> Plan {
        var steps: [GroupStep] = []
        for (package, groups) in state.packages.sorted(by: { $0.key < $1.key }) {
            for group in groups.keys.sorted() {
                let removing = leaves.contains(package)
                steps.append(
                    GroupStep(
                        package: package, group: group, action: removing ? .remove : .keep,
                        method: .none, reason: removing ? "package uninstalled" : "unchanged"))
            }
        }
        return Plan(version: state.version ?? "", steps: steps)
    }

    /// Identifies one installed group.
    package typealias GroupKey = MapModel.GroupKey

    /// The plan that leaves exactly `packages` (leaf ids) installed with the `selection`'s
    /// groups at `manifest`'s version.
    /// - Parameters:
    ///   - inconsistent: installed groups whose files no longer match their state; they
    ///     are re-fetched in full (a patch would not apply).
    ///   - scope: when given, installed packages outside it keep exactly the groups they
    ///     have (an install touches only what it installs).
    package static func plan(
        installed: InstalledState, manifest: Manifest, packages: Set<String>,
        selection: Set<String>, strategy: UpdateStrategy,
        inconsistent: Set<GroupKey> = [], scope: Set<String>? = nil, canClone: Bool = false, canLink: Bool = true
    ) -> Plan {
        // Where the file system refuses hard links (FAT and exFAT cards) and cannot clone,
        // every file carried over into the new version is a copy.
        let copies = !canLink && !canClone
        var steps: [GroupStep] = []
        let leaves = manifest.root.leaves
        let leafIDs = Set(leaves.map(\.id))
        for leaf in leaves where packages.contains(leaf.id) {
            let have = installed.packages[leaf.id] ?? [:]
            if let scope, !scope.contains(leaf.id) {
                for (group, installedGroup) in have {
                    steps.append(
                        GroupStep(
                            package: leaf.id, group: group, action: .keep, method: .none,
                            writeBytes: copies ? diskBytes(size: installedGroup.size, files: installedGroup.files) : 0,
                            reason: "not part of this operation", artifact: leaf.artifacts?[group]))
                }
                continue
            }
            for group in manifest.groups {
                let current = have[group.id]
                guard selection.contains(group.id), let artifact = leaf.artifacts?[group.id] else {
                    if current != nil {
                        let why = leaf.artifacts?[group.id] == nil ? "the package no longer has this group" : "group deselected"
                        steps.append(GroupStep(package: leaf.id, group: group.id, action: .remove, method: .none, reason: why))
                    }
                    continue
                }
                let key = GroupKey(leaf.id, group.id)
                steps.append(
                    step(
                        for: key, current: current, artifact: artifact, strategy: strategy,
                        broken: inconsistent.contains(key), installedVersion: installed.version, canClone: canClone,
                        canLink: canLink))
            }
        }
        for (package, groups) in installed.packages where !packages.contains(package) || !leafIDs.contains(package) {
            let why = leafIDs.contains(package) ? "package uninstalled" : "package no longer published"
            for group in groups.keys {
                steps.append(GroupStep(package: package, group: group, action: .remove, method: .none, reason: why))
            }
        }
        steps.sort { ($0.package, $0.group) < ($1.package, $1.group) }
        return Plan(version: manifest.version, steps: steps)
    }

    /// - Parameter installedVersion: the version installed; a chain is labelled from it to the
    ///   target (an unchanged group's patch starts at a later version's identical files).
    /// - Parameter canClone: the data directory's file system clones files, so a large
    ///   patched file takes only its changed blocks (``PatchEdge/cloneWriteBytes``).
    package static func step(
        for key: GroupKey, current: InstalledGroup?, artifact: Artifact,
        strategy: UpdateStrategy, broken: Bool, installedVersion: String? = nil, canClone: Bool = false,
        canLink: Bool = true
    ) -> GroupStep {
        let copies = !canLink && !canClone
        func full(_ action: GroupStep.Action, _ reason: String) -> GroupStep {
            GroupStep(
                package: key.package, group: key.group, action: action, method: .full,
                downloadBytes: artifact.size, fullBytes: artifact.size, writeBytes: diskBytes(artifact),
                reason: reason, artifact: artifact)
        }
        guard let current else { return full(.install, "not installed") }
        if current.treeHash == artifact.treeHash && !broken {
            return GroupStep(
                package: key.package, group: key.group, action: .keep, method: .none,
                writeBytes: copies ? diskBytes(artifact) : 0, reason: "unchanged", artifact: artifact)
        }
        if broken { return full(.update, "installed files were changed locally; a patch cannot apply") }
        if strategy == .full { return full(.update, "full update requested") }
        guard let chain = cheapestChain(from: current.treeHash, to: artifact.treeHash, edges: artifact.patches ?? []) else {
            return full(.update, "no patch chain from the installed files")
        }
        let cost = chain.saturatingSum(\.size)
        guard cost < artifact.size else {
            return full(.update, "patches (\(ByteFormat.string(cost))) cost more than the full archive")
        }
        let versions = [installedVersion ?? chain[0].from] + chain.map(\.to)
        // A patch writes only the files it changes (the rest are hard links); an edge of an
        // older manifest does not say how much, so the whole tree is counted for it.
        // Without hard links or clones the unchanged files of each tree are copied too.
        let writes = chain.saturatingSum { edge in
            copies ? diskBytes(artifact) : (canClone ? edge.cloneWriteBytes : nil) ?? edge.writeBytes ?? diskBytes(artifact)
        }
        return GroupStep(
            package: key.package, group: key.group, action: .update, method: .delta, chain: versions,
            downloadBytes: cost, fullBytes: artifact.size, writeBytes: writes,
            reason: chain.count == 1 ? "direct patch" : "chain of \(chain.count) patches",
            artifact: artifact, patches: chain)
    }

    /// Disk space the unpacked files may take: their bytes plus up to one 4 KiB block per
    /// file lost to rounding.
    package static func diskBytes(_ artifact: Artifact) -> Int64 {
        diskBytes(size: artifact.unpackedSize, files: artifact.files)
    }

    /// `size` bytes in `files` files, each rounded up by at most one 4 KiB block.
    package static func diskBytes(size: Int64, files: Int) -> Int64 {
        let blocks = Int64(files).multipliedReportingOverflow(by: 4096)
        return size.plusSaturating(blocks.overflow ? .max : blocks.partialValue)
    }

    /// The patch sequence with the fewest bytes from tree `start` to tree `goal` (Dijkstra
    /// over tree hashes), or `nil` when none connects them.
    /// Each edge is looked at once and each step scans the trees not yet settled: with the
    /// manifest's ``SiteLimits/patchesPerArtifact`` edges, at most about a million steps.
    package static func cheapestChain(from start: String, to goal: String, edges: [PatchEdge]) -> [PatchEdge]? {
        guard start != goal else { return nil }
        let leaving = Dictionary(grouping: edges, by: \.fromTreeHash)
        var best: [String: (cost: Int64, via: PatchEdge?)] = [start: (0, nil)]
        var open: [String: Int64] = [start: 0]
        while let (node, cost) = open.min(by: { $0.value < $1.value }) {
            if node == goal { break }
            open[node] = nil
            for edge in leaving[node] ?? [] {
                let reached = cost.plusSaturating(edge.size)
                if reached < best[edge.toTreeHash]?.cost ?? .max {
                    best[edge.toTreeHash] = (reached, edge)
                    open[edge.toTreeHash] = reached
                }
            }
        }
        guard best[goal] != nil else { return nil }
        var chain: [PatchEdge] = []
        var node = goal
        while let edge = best[node]?.via, chain.count <= edges.count {
            chain.append(edge)
            node = edge.fromTreeHash
        }
        return chain.reversed()
    }
}
