import Foundation
import MapModel
import MapPlanner
import MapDelta
import MapStore
import MapTransfer
import MapPlatform

extension MapLoader {
    /// Compares the installed maps with the newest published version and plans the update
    /// with `strategy`, including data-group selection changes. Downloads no data.
    public func checkForUpdate(strategy: UpdateStrategy = .delta) async throws(MapLoaderError) -> UpdateCheck {
        try await run(.checkForUpdate) { loader in
            let check = try await loader.updateCheck(strategy: strategy, operation: .checkForUpdate).check
            loader.hub.emit(.updateChecked(check))
            return check
        }
    }

    /// Bytes ``performUpdate(strategy:dryRun:)`` would download with `strategy`.
    public func updateSize(strategy: UpdateStrategy = .delta) async throws(MapLoaderError) -> Int64 {
        try await checkForUpdate(strategy: strategy).plan.downloadBytes
    }

    /// Moves every installed package to the newest version and applies selection changes,
    /// all in one generation switch. `.delta` takes the cheapest verified patch chain per
    /// group and falls back to the full archive where a chain is missing, dearer, or fails.
    /// With `dryRun`, returns the plan's report without changing anything.
    @discardableResult
    public func performUpdate(strategy: UpdateStrategy = .delta, dryRun: Bool = false) async throws(MapLoaderError) -> UpdateReport {
        try await run(.update) { loader in
            let (check, context) = try await loader.updateCheck(strategy: strategy, operation: .update)
            guard check.updateAvailable, !dryRun else {
                return UpdateReport(
                    fromVersion: context.state.version, toVersion: context.state.version,
                    steps: check.plan.steps, downloadedBytes: 0, committed: false, seconds: 0)
            }
            let report = try await loader.execute(
                check.plan, from: context.state,
                manifestSHA: context.catalog.entry(check.plan.version)?.sha256,
                operation: .update)
            loader.hub.emit(.updated(report))
            return report
        }
    }

    /// Re-hashes every installed file against the store's record.
    public func verify() async throws(MapLoaderError) -> VerifyReport {
        try await run(.verify) { loader in
            let state = try loader.store.state()
            let total = state.packages.values.reduce(0) { $0 + $1.count }
            let store = loader.store
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
        try await run(.repair) { loader in
            if case .failure = Result(catching: { try loader.store.state() }) {
                return try await loader.rebuildState()
            }
            let context = try await loader.context(atInstalledVersion: true, operation: .repair)
            let store = loader.store
            let state = context.state
            let findings = try await offActor { StoreCheck.full(store, state) }
            let broken = Dictionary(findings.map { ($0.key, $0.detail) }, uniquingKeysWith: { a, _ in a })
            let plan = try Planner.repair(installed: state, manifest: context.manifest, broken: broken)
            guard plan.changesFiles else {
                return UpdateReport(
                    fromVersion: state.version, toVersion: state.version, steps: plan.steps,
                    downloadedBytes: 0, committed: false, seconds: 0)
            }
            return try await loader.execute(plan, from: state, manifestSHA: state.manifest, operation: .repair)
        }
    }

    /// Repair when the installed state itself is unusable (unreadable, inconsistent):
    /// the packages and groups whose folders are on disk are installed afresh, in full, at
    /// the version the state recorded when the site still has it, else the newest; a data
    /// directory with nothing recognisable ends up empty and usable again.
    private func rebuildState() async throws -> UpdateReport {
        progress(.repair, .resolve)
        let client = try site()
        let (catalog, settings) = try await acceptedCatalog(client)
        let live = store.live
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
        return try await execute(plan, from: empty, manifestSHA: catalog.entry(version)?.sha256, operation: .repair)
    }

    /// The plan from the installed state to the newest version.
    private func updateCheck(strategy: UpdateStrategy, operation: MapLoaderOperation) async throws -> (check: UpdateCheck, context: Context) {
        let context = try await context(atInstalledVersion: false, operation: operation, need: .installed)
        let broken = try await quickCheck(context.state)
        let sharing = store.fileSharing()
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
