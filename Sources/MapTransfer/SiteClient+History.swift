package import MapModel

extension SiteClient {
    /// `manifest` with the patch edges a device far behind may chain through. A manifest
    /// carries the edges into its own version's trees only (so it stays the same size
    /// however many versions a site keeps); the edges into older trees are in the
    /// manifests of their versions. When an installed group's tree has no chain of the
    /// manifest's edges to the new tree (the device skipped more versions than the
    /// publisher's patch depth), the manifests of every version between the installed one
    /// and `manifest`'s are read (the parts holding those packages) and their edges for
    /// those groups added, so the planner weighs every chain, as when one manifest carried
    /// them all. A device within the patch depth reads nothing more. A manifest the site no
    /// longer has, or that fails its checks, only leaves its edges out (a group with no
    /// chain is updated by its full archive); a lost connection or a cancellation ends
    /// the operation as for any manifest.
    package func withPatchHistory(
        _ manifest: Manifest, in catalog: Catalog, installed state: InstalledState
    ) async throws(MapLoaderError) -> Manifest {
        var manifest = manifest
        let behind = Self.groupsWithoutChain(manifest, from: state)
        guard !behind.isEmpty, let target = catalog.versions.firstIndex(where: { $0.version == manifest.version }) else {
            return manifest
        }
        let oldest = state.version.flatMap { version in catalog.versions.firstIndex { $0.version == version } } ?? -1
        guard oldest + 1 < target else { return manifest }
        let packages = Set(behind.map(\.package))
        for entry in catalog.versions[(oldest + 1)..<target].reversed() {
            let known = [entry.cacheKey, catalog.entry(manifest.version)?.cacheKey, state.manifest].compactMap { $0 }
            let older: Manifest
            do {
                older = try await self.manifest(entry.version, in: catalog, parts: .holding(packages), knownFrom: known)
            } catch {
                switch error {
                case .cancelled, .noServer, .connectionFailed, .networkNotAllowed: throw error
                default: continue
                }
            }
            let leaves = Dictionary(older.root.leaves.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            var edges: [String: [String: [PatchEdge]]] = [:]
            for key in behind {
                if let found = leaves[key.package]?.artifacts?[key.group]?.patches { edges[key.package, default: [:]][key.group] = found }
            }
            manifest.root = manifest.root.addingPatchEdges(edges)
        }
        return manifest
    }

    /// The installed groups whose tree differs from the manifest's and has no chain of the
    /// manifest's edges to it, though some edge leads to it (a chain ends with one of the
    /// edges into the new tree, which the manifest holds: with none, older manifests
    /// cannot help, as when a patch was not worth publishing).
    static func groupsWithoutChain(_ manifest: Manifest, from state: InstalledState) -> Set<GroupKey> {
        var behind = Set<GroupKey>()
        for leaf in manifest.root.leaves {
            for (group, installed) in state.packages[leaf.id] ?? [:] {
                guard let artifact = leaf.artifacts?[group], artifact.treeHash != installed.treeHash, let edges = artifact.patches,
                    !edges.isEmpty, !reaches(from: installed.treeHash, to: artifact.treeHash, through: edges)
                else { continue }
                behind.insert(GroupKey(leaf.id, group))
            }
        }
        return behind
    }

    /// Whether a chain of `edges` leads from tree `start` to tree `goal`.
    static func reaches(from start: String, to goal: String, through edges: [PatchEdge]) -> Bool {
        var seen: Set<String> = [start]
        var frontier = [start]
        while let tree = frontier.popLast() {
            if tree == goal { return true }
            for edge in edges where edge.fromTreeHash == tree && seen.insert(edge.toTreeHash).inserted {
                frontier.append(edge.toTreeHash)
            }
        }
        return false
    }
}

extension PackageNode {
    /// This tree with `edges` (by package, then group) added to the artifacts they belong
    /// to (an edge already there, by its two trees, is not added twice).
    func addingPatchEdges(_ edges: [String: [String: [PatchEdge]]]) -> PackageNode {
        var node = self
        node.children = children?.map { $0.addingPatchEdges(edges) }
        for (group, added) in edges[id] ?? [:] {
            guard var artifact = node.artifacts?[group] else { continue }
            var patches = artifact.patches ?? []
            var known = Set(patches.map { $0.fromTreeHash + $0.toTreeHash })
            patches += added.filter { known.insert($0.fromTreeHash + $0.toTreeHash).inserted }
            artifact.patches = patches.isEmpty ? nil : patches
            node.artifacts?[group] = artifact
        }
        return node
    }
}
