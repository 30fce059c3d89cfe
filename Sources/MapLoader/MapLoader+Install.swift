import Foundation
import MapDelta
import MapModel
import MapPlanner
import MapPlatform
import MapStore
import MapTransfer

extension MapLoader {
    /// Installs packages: a leaf with its selected groups, an inner node with all its
    /// leaves. New packages are installed at the version already installed (one map
    /// version at a time); everything commits together or not at all.
    @discardableResult
    public func install(_ ids: [String]) async throws(MapLoaderError) -> UpdateReport {
        guard !ids.isEmpty else { throw .invalidParameters("name at least one package to install") }
        return try await enqueue(.install) { loader, operation in
            let context = try await loader.planningContext(operation, atInstalledVersion: true)
            let (plan, leaves) = try await loader.installPlan(ids, context, in: operation)
            guard plan.changesFiles else {
                return UpdateReport.unchanged(at: context.state.version, steps: plan.steps)
            }
            let report = try await loader.carryOut(
                plan, from: context.state,
                manifestSHA: context.catalog.entry(context.manifest.version)?.cacheKey, in: operation)
            loader.hub.emit(.installed(leaves.sorted()))
            return report
        }
    }

    /// What ``install(_:)`` of `ids` would do, without downloading or changing anything:
    /// per package and group, the bytes it would download and write, and the plan's peak
    /// disk use (``Plan/peakBytes``). Reads only: it takes no write lock, so another
    /// process's change never holds it up; a change of this loader's runs first, since the
    /// plan is made against the versions that change leaves installed.
    public func planInstall(_ ids: [String]) async throws(MapLoaderError) -> Plan {
        guard !ids.isEmpty else { throw .invalidParameters("name at least one package to install") }
        return try await enqueue(.planInstall) { loader, operation in
            let context = try await loader.planningContext(operation, atInstalledVersion: true)
            return try await loader.installPlan(ids, context, in: operation).plan
        }
    }

    /// The plan that installs `ids` on top of what is installed, and the leaves it adds.
    private func installPlan(
        _ ids: [String], _ context: PlanningContext, in operation: OperationContext
    ) async throws -> (plan: Plan, leaves: Set<String>) {
        let leaves = try leaves(of: ids, in: context.manifest)
        let broken = try await quickCheck(context.state, in: operation)
        let sharing = operation.store.fileSharing()
        let plan = Planner.plan(
            installed: context.state, manifest: context.manifest,
            packages: Set(context.state.packages.keys).union(leaves),
            selection: context.selection, strategy: .full, inconsistent: broken,
            scope: leaves, canClone: sharing.canClone, canLink: sharing.canLink)
        return (plan, leaves)
    }

    /// Removes every installed package (works offline); `committed` is false when nothing
    /// was installed.
    @discardableResult
    public func uninstallAll() async throws(MapLoaderError) -> UpdateReport {
        try await enqueue(.uninstall) { loader, operation in
            let state = try operation.store.state()
            return try await loader.remove(Set(state.packages.keys), from: state, in: operation)
        }
    }

    /// Removes packages (an inner node removes all its installed leaves). Works offline.
    @discardableResult
    public func uninstall(_ ids: [String]) async throws(MapLoaderError) -> UpdateReport {
        guard !ids.isEmpty else { throw .invalidParameters("name at least one package to uninstall") }
        return try await enqueue(.uninstall) { loader, operation in
            let state = try operation.store.state()
            // The installed version's tree names the packages; with nothing installed, the
            // site's tree (when reachable) tells an unknown id from one not installed.
            var manifest = try await loader.installedManifest(state, in: operation)
            if manifest == nil, ids.contains(where: { state.packages[$0] == nil }) {
                manifest = try? await loader.planningContext(operation, atInstalledVersion: true).manifest
            }
            var leaves = Set<String>()
            for id in ids {
                if state.packages[id] != nil {
                    leaves.insert(id)
                    continue
                }
                guard let node = manifest?.root.allNodes.first(where: { $0.id == id }) else {
                    guard let manifest else { throw MapLoaderError.notInstalled(id) }
                    let ids = manifest.root.allNodes.map(\.id)
                    throw MapLoaderError.unknownPackage(id, suggestion: PackageTreeBuilder.suggestion(for: id, among: ids))
                }
                let installed = node.leaves.map(\.id).filter { state.packages[$0] != nil }
                guard !installed.isEmpty else { throw MapLoaderError.notInstalled(id) }
                leaves.formUnion(installed)
            }
            return try await loader.remove(leaves, from: state, in: operation)
        }
    }

    /// Removes the installed `leaves` from `state` in one new generation.
    private func remove(_ leaves: Set<String>, from state: InstalledState, in operation: OperationContext) async throws -> UpdateReport {
        let plan = Planner.removal(of: leaves, from: state)
        guard plan.changesFiles else {
            return UpdateReport.unchanged(at: state.version, steps: plan.steps)
        }
        let report = try await carryOut(plan, from: state, manifestSHA: state.manifest, in: operation)
        // The caller's tags go with the package.
        _ = try await operation.store.updateSettings { settings in
            for leaf in leaves { settings.tags?[leaf] = nil }
            if settings.tags?.isEmpty == true { settings.tags = nil }
        }
        hub.emit(.uninstalled(leaves.sorted()))
        return report
    }

    /// The leaf ids under `ids`, or an error naming the first unknown id.
    func leaves(of ids: [String], in manifest: Manifest) throws -> Set<String> {
        let nodes = manifest.root.allNodes
        var leaves = Set<String>()
        for id in ids {
            guard let node = nodes.first(where: { $0.id == id }) else {
                throw MapLoaderError.unknownPackage(id, suggestion: PackageTreeBuilder.suggestion(for: id, among: nodes.map(\.id)))
            }
            leaves.formUnion(node.leaves.map(\.id))
        }
        return leaves
    }

    /// The manifest of the installed version: from the cache, else from the site, else `nil`.
    func installedManifest(_ state: InstalledState, in operation: OperationContext) async throws -> Manifest? {
        guard let version = state.version, let sha = state.manifest else { return nil }
        let cache = operation.manifestCache
        if let manifest = await SiteClient.offPool({ SiteClient.cachedManifest(sha, in: cache) }) ?? nil { return manifest }
        let client = try operation.siteClient()
        return try await client.manifest(version, in: try await operation.acceptance.accept(from: client).0)
    }
}
