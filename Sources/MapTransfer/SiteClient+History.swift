package import MapModel

extension SiteClient {
    /// `manifest` with the patch edges a device behind by more than one version may chain
    /// through. A manifest carries the edges into its own version's trees only (so it stays
    /// the same size however many versions a site keeps); the edges into older trees are in
    /// the manifests of their versions. For a device that skipped versions, those between
    /// the installed one and `manifest`'s are read (the parts holding its changed packages)
    /// and their edges for the changed groups added, so the planner weighs a chain against
    /// a direct patch as before. A manifest that cannot be read only leaves its edges out: a
    /// group with no chain left is updated by its full archive.
    package func withPatchHistory(_ manifest: Manifest, in catalog: Catalog, installed state: InstalledState) async -> Manifest {
        var manifest = manifest
        let changed = Self.changedGroups(manifest, from: state)
        guard !changed.isEmpty, let target = catalog.versions.firstIndex(where: { $0.version == manifest.version }) else {
            return manifest
        }
        let oldest = state.version.flatMap { version in catalog.versions.firstIndex { $0.version == version } } ?? -1
        guard oldest + 1 < target else { return manifest }
        let packages = Set(changed.map(\.package))
        for entry in catalog.versions[(oldest + 1)..<target].reversed() {
            let known = [entry.sha256, catalog.entry(manifest.version)?.sha256, state.manifest].compactMap { $0 }
            guard let older = try? await self.manifest(entry.version, in: catalog, parts: .holding(packages), knownFrom: known) else {
                continue
            }
            let leaves = Dictionary(older.root.leaves.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            var edges: [GroupKey: [PatchEdge]] = [:]
            for key in changed { edges[key] = leaves[key.package]?.artifacts?[key.group]?.patches }
            manifest.root = manifest.root.addingPatchEdges(edges)
        }
        return manifest
    }

    /// The installed groups whose tree differs from the manifest's.
    static func changedGroups(_ manifest: Manifest, from state: InstalledState) -> Set<GroupKey> {
        var changed = Set<GroupKey>()
        for leaf in manifest.root.leaves {
            for (group, installed) in state.packages[leaf.id] ?? [:] {
                if let artifact = leaf.artifacts?[group], artifact.treeHash != installed.treeHash { changed.insert(GroupKey(leaf.id, group)) }
            }
        }
        return changed
    }
}

extension PackageNode {
    /// This tree with `edges` added to the artifacts they belong to (an edge already there,
    /// by its two trees, is not added twice).
    func addingPatchEdges(_ edges: [GroupKey: [PatchEdge]]) -> PackageNode {
        var node = self
        node.children = children?.map { $0.addingPatchEdges(edges) }
        for (key, added) in edges where key.package == id {
            guard var artifact = node.artifacts?[key.group] else { continue }
            var patches = artifact.patches ?? []
            var known = Set(patches.map { $0.fromTreeHash + $0.toTreeHash })
            patches += added.filter { known.insert($0.fromTreeHash + $0.toTreeHash).inserted }
            artifact.patches = patches.isEmpty ? nil : patches
            node.artifacts?[key.group] = artifact
        }
        return node
    }
}
