import MapModel

/// Computes every node's ``PackageState`` from a manifest, the installed state and the selection.
package struct PackageTreeBuilder {
    package let context: PlanningContext
    package let inconsistent: Set<Planner.GroupKey>

    package func tree() -> PackageTree {
        var out: [PackageStatus] = []
        visit(context.manifest.root, depth: 0, parent: nil, into: &out)
        return PackageTree(version: context.manifest.version, currentVersion: context.catalog.current, packages: out)
    }

    @discardableResult
    private func visit(_ node: PackageNode, depth: Int, parent: String?, into out: inout [PackageStatus]) -> PackageStatus {
        let index = out.count
        out.append(
            PackageStatus(
                id: node.id, title: node.title, depth: depth, parent: parent, isLeaf: node.isLeaf,
                state: .notInstalled, version: nil, downloadSize: 0, sizeOnDisk: 0, groups: [],
                bbox: node.bbox, metadata: node.metadata))
        var status = out[index]
        if node.isLeaf {
            leafStatus(node, into: &status)
        } else {
            let children = (node.children ?? []).map { visit($0, depth: depth + 1, parent: node.id, into: &out) }
            status.state = Self.combine(children.map(\.state))
            status.downloadSize = children.saturatingSum(\.downloadSize)
            status.sizeOnDisk = children.saturatingSum(\.sizeOnDisk)
            status.version = children.contains { $0.version != nil } ? context.state.version : nil
        }
        out[index] = status
        return status
    }

    private func leafStatus(_ leaf: PackageNode, into status: inout PackageStatus) {
        let installed = context.state.packages[leaf.id] ?? [:]
        let wanted = (leaf.artifacts ?? [:]).filter { context.selection.contains($0.key) }
        status.groups = installed.keys.sorted()
        status.offered = context.manifest.groups.compactMap { group in
            leaf.artifacts?[group.id].map {
                GroupOffer(
                    id: group.id, downloadSize: $0.size, unpackedSize: $0.unpackedSize,
                    selected: context.selection.contains(group.id), installed: installed[group.id] != nil)
            }
        }
        status.sizeOnDisk = context.state.size(of: leaf.id)
        status.tags = installed.isEmpty ? [:] : context.settings.tags?[leaf.id] ?? [:]
        status.version = installed.isEmpty ? nil : context.state.version
        var outdated = false
        for (group, artifact) in wanted {
            let step = Planner.step(
                for: .init(leaf.id, group), current: installed[group], artifact: artifact,
                strategy: .delta, broken: inconsistent.contains(.init(leaf.id, group)),
                installedVersion: context.state.version)
            if installed[group] != nil, step.action != .keep { outdated = true }
            if !installed.isEmpty || step.action == .install { status.downloadSize = status.downloadSize.plusSaturating(step.downloadBytes) }
        }
        if installed.isEmpty {
            status.state = .notInstalled
        } else if installed.keys.contains(where: { inconsistent.contains(.init(leaf.id, $0)) }) {
            status.state = .inconsistent
        } else if outdated {
            status.state = .updateAvailable
        } else {
            status.state = Set(wanted.keys).isSubset(of: installed.keys) ? .installed : .partiallyInstalled
        }
    }

    package static func combine(_ states: [PackageState]) -> PackageState {
        if states.contains(.inconsistent) { return .inconsistent }
        if states.contains(.updateAvailable) { return .updateAvailable }
        if states.allSatisfy({ $0 == .installed }) { return .installed }
        if states.allSatisfy({ $0 == .notInstalled }) { return .notInstalled }
        return .partiallyInstalled
    }

    /// The closest id by edit distance, when it is close enough to be a typo.
    package static func suggestion(for id: String, among ids: [String]) -> String? {
        Suggestion.closest(to: id, among: ids)
    }

    /// A value with every stored property given.
    package init(context: PlanningContext, inconsistent: Set<Planner.GroupKey>) {
        self.context = context
        self.inconsistent = inconsistent
    }
}
