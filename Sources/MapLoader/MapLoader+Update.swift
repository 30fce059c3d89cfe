import Foundation
import MapDelta
import MapModel
import MapPlanner
import MapPlatform
import MapStore
import MapTransfer

extension MapLoader {
    /// Compares the installed maps with the newest published version and plans the update
    /// with `strategy`, including data-group selection changes. Downloads no data.
    public func checkForUpdate(strategy: Plan.Strategy = .delta) async throws(MapLoaderError) -> UpdateCheck {
        try await enqueue(.checkForUpdate) { loader, operation in
            let check = try await loader.updateCheck(strategy: strategy, in: operation).check
            loader.hub.emit(.updateChecked(check))
            return check
        }
    }

    /// Bytes ``performUpdate(strategy:dryRun:)`` would download with `strategy`.
    public func updateSize(strategy: Plan.Strategy = .delta) async throws(MapLoaderError) -> Int64 {
        try await checkForUpdate(strategy: strategy).plan.downloadBytes
    }

    /// Moves every installed package to the newest version and applies selection changes,
    /// all in one generation switch. `.delta` takes the cheapest verified patch chain per
    /// group and falls back to the full archive where a chain is missing, dearer, or fails.
    /// With `dryRun`, returns the plan's report without changing anything, as a reader
    /// (it works on a read-only data directory, as ``checkForUpdate(strategy:)`` does).
    @discardableResult
    public func performUpdate(strategy: Plan.Strategy = .delta, dryRun: Bool = false) async throws(MapLoaderError) -> UpdateReport {
        try await enqueue(.update, reading: dryRun) { loader, operation in
            let (check, context) = try await loader.updateCheck(strategy: strategy, in: operation)
            guard check.updateAvailable, !dryRun else {
                return UpdateReport.unchanged(at: context.state.version, steps: check.plan.steps)
            }
            let report = try await loader.carryOut(
                check.plan, from: context.state,
                manifestSHA: context.catalog.entry(check.plan.version)?.cacheKey, in: operation)
            loader.hub.emit(.updated(report))
            return report
        }
    }

    /// Re-hashes every installed file against the store's record.
    public func verify() async throws(MapLoaderError) -> VerifyReport {
        try await enqueue(.verify) { loader, operation in
            let state = try operation.store.state()
            let total = state.packages.values.reduce(0) { $0 + $1.count }
            let store = operation.store
            let hub = loader.hub
            let findings = try await offActor {
                StoreCheck.full(store, state) { checked, key in
                    hub.progress(.verify, .verify, items: checked, totalItems: total, item: "\(key.package)/\(key.group)")
                }
            }
            let report = VerifyReport(
                groupsChecked: total,
                problems: findings.map {
                    VerifyReport.Problem(package: $0.key.package, group: $0.key.group, detail: $0.detail)
                })
            loader.hub.emit(.verified(report))
            return report
        }
    }

    /// Re-hashes installed files and re-fetches only the groups that differ from what was
    /// installed (their full archives at the installed version), in one generation switch.
    @discardableResult
    public func repair() async throws(MapLoaderError) -> UpdateReport {
        try await enqueue(.repair) { loader, operation in
            if case .failure = Result(catching: { try operation.store.state() }) {
                return try await loader.rebuildState(in: operation)
            }
            let context = try await loader.planningContext(operation, atInstalledVersion: true)
            let store = operation.store
            let state = context.state
            let findings = try await offActor { StoreCheck.full(store, state) }
            let broken = Dictionary(findings.map { ($0.key, $0.detail) }, uniquingKeysWith: { a, _ in a })
            let plan = try Planner.repair(installed: state, manifest: context.manifest, broken: broken)
            guard plan.changesFiles else {
                return UpdateReport.unchanged(at: state.version, steps: plan.steps)
            }
            return try await loader.carryOut(plan, from: state, manifestSHA: state.manifest, in: operation)
        }
    }

    /// Repair when the installed state itself is unusable (unreadable, inconsistent):
    /// the packages and groups whose folders are on disk are installed afresh, in full, at
    /// the version the state recorded when the site still has it, else the newest; a data
    /// directory with nothing recognisable ends up empty and usable again.
    private func rebuildState(in operation: OperationContext) async throws -> UpdateReport {
        operation.progress(.resolve)
        let client = try operation.siteClient()
        let (catalog, settings) = try await operation.acceptance.accept(from: client)
        let live = operation.store.live
        let recorded = (try? JSONSerialization.jsonObject(with: Data(contentsOf: live.appendingPathComponent("state.json"))))
            .flatMap { ($0 as? [String: Any])?["version"] as? String }
        let version = recorded.flatMap { catalog.entry($0) == nil ? nil : $0 } ?? catalog.current
        let manifest = try await client.manifest(version, in: catalog)
        let leaves = Set(manifest.root.leaves.map(\.id))
        let found = Set(FileSystem.names(in: live.path).filter(leaves.contains))
        let plan = Planner.plan(
            installed: .empty, manifest: manifest, packages: found,
            selection: settings.selectedGroups(manifest.groups), strategy: .full)
        let empty = InstalledState.empty
        return try await carryOut(plan, from: empty, manifestSHA: catalog.entry(version)?.cacheKey, in: operation)
    }

    /// The plan from the installed state to the newest version.
    private func updateCheck(
        strategy: UpdateStrategy, in operation: OperationContext
    ) async throws -> (check: UpdateCheck, context: PlanningContext) {
        // The parts holding what is installed (the state cannot change meanwhile: a writer
        // holds the lock, a reader its pinned generation).
        let installed = Set(try operation.store.state().packages.keys)
        let context = try await planningContext(operation, atInstalledVersion: false, parts: .holding(installed), withPatchHistory: true)
        let broken = try await quickCheck(context.state, in: operation)
        let sharing = operation.store.fileSharing()
        let plan = Planner.plan(
            installed: context.state, manifest: context.manifest,
            packages: Set(context.state.packages.keys), selection: context.selection,
            strategy: strategy, inconsistent: broken, canClone: sharing.canClone, canLink: sharing.canLink)
        let moves = context.state.version != nil && context.state.version != context.manifest.version
        let check = UpdateCheck(
            installedVersion: context.state.version, currentVersion: context.catalog.current,
            updateAvailable: plan.changesFiles || moves, plan: plan)
        return (check, context)
    }
}
