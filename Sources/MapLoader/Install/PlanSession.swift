import Foundation
import MapDelta
import MapModel
import MapPlanner
import MapPlatform
import MapStore
import MapTransfer

extension MapLoader {
    /// Carries out `plan` in a new ``PlanSession`` of `operation`.
    func carryOut(
        _ plan: Plan, from state: InstalledState, manifestSHA: String?, in operation: OperationContext
    ) async throws -> UpdateReport {
        let quota = try configuration.quota ?? operation.store.settings().quota
        let session = PlanSession(operation, quota: quota)
        return try await session.carryOut(plan, from: state, manifestSHA: manifestSHA)
    }
}

/// One operation's run of a plan: it owns everything the run adds to its operation's
/// context (the transfer ledger, the blob fetches shared by groups, the generation being
/// built) and is dropped when the run ends, so nothing of one operation outlives it on the
/// loader. The plan it runs is never changed; the report it returns records what
/// happened, fallbacks from patch to full archive included.
actor PlanSession {
    /// The operation this run belongs to: its store view, events, site client and configuration.
    let context: OperationContext
    /// The most bytes the data directory may hold, if limited (the configuration's, else the data directory's).
    let quota: Int64?
    /// The operation's kind (named in every progress event).
    var operation: MapLoaderOperation { context.kind }
    /// The data directory, as the operation sees it.
    var store: Store { context.store }
    /// Where events go.
    var hub: EventHub { context.hub }
    /// The site, or why there is none (a plan without downloads needs none).
    var site: Result<SiteClient, MapLoaderError> { context.site }
    /// Threads a patch apply may use (``MapLoader/Configuration/threads``).
    var threads: Int { context.configuration.threads }
    /// Downloads in flight or done in this run, by SHA-256: two groups that need one blob
    /// fetch it once.
    private var blobFetches: [String: Task<URL, any Error>] = [:]
    /// Bytes of patched files continued from an interrupted earlier run.
    var resumedBytes: Int64 = 0

    /// A run of the operation `context`, within `quota`.
    init(_ context: OperationContext, quota: Int64?) {
        self.context = context
        self.quota = quota
    }

    /// Refuses a plan whose peak (what is installed now, plus the plan's downloads and
    /// new files) would pass the quota, naming the largest installed packages.
    private func checkQuota(_ plan: Plan, _ state: InstalledState) throws {
        guard let quota, plan.peakBytes > 0 else { return }
        let installed = state.packages.keys.reduce(Int64(0)) { $0 + state.size(of: $1) }
        let needed = installed.plusSaturating(plan.peakBytes)
        guard needed > quota else { return }
        let largest = state.packages.keys.sorted { (state.size(of: $0), $1) > (state.size(of: $1), $0) }.prefix(3)
        throw MapLoaderError.quotaExceeded(
            quota: quota, needed: needed,
            largest: largest.map { "\($0) \(ByteFormat.string(state.size(of: $0)))" })
    }

    /// Sends a progress event for this operation.
    func progress(
        _ phase: OperationPhase, bytes: Int64 = 0, total: Int64 = 0,
        items: Int = 0, totalItems: Int = 0, item: String? = nil
    ) {
        context.progress(phase, bytes: bytes, total: total, items: items, totalItems: totalItems, item: item)
    }

    /// Carries out `plan` on top of the installed `state`: fetches, verifies and unpacks what changes,
    /// hard-links what does not, and commits the new generation in one switch. On any
    /// failure the live generation is untouched and the half-built one is removed.
    /// - Parameter manifestSHA: the pinned hash of the manifest of `plan.version`, recorded in the new state.
    func carryOut(_ plan: Plan, from state: InstalledState, manifestSHA: String?) async throws -> UpdateReport {
        let started = Date()
        for step in plan.steps where step.action != .keep { hub.emit(.planned(step)) }
        hub.addWork(Self.work(of: plan))
        try checkQuota(plan, state)
        if plan.peakBytes > 0, let available = store.availableSpace(), plan.peakBytes > available {
            throw MapLoaderError.insufficientSpace(
                needed: plan.peakBytes, available: available, path: store.root.path,
                ways: Self.waysToFit(plan, state: state, available: available))
        }
        let store = self.store
        let builder = try await offActor { try store.beginGeneration() }
        do {
            let transfer = TransferLedger(total: plan.downloadBytes)
            var installed: [String: [String: InstalledGroup]] = [:]
            var done = plan.steps
            let kept = plan.steps.filter { $0.action == .keep }
            try await offActor {
                for step in kept { try builder.carryOver(package: step.package, group: step.group) }
            }
            for step in kept {
                installed[step.package, default: [:]][step.group] = state.packages[step.package]?[step.group]
            }
            let work = plan.steps.indices.filter { [.install, .update].contains(plan.steps[$0].action) }
            let count = work.count
            // Groups are fetched and unpacked or patched a few at a time: each waits mostly on
            // the network and the disk, and the actor is free while it does.
            try await withThrowingTaskGroup(of: (Int, InstalledGroup, GroupStep).self) { group in
                var pending = work[...]
                func startNext() {
                    guard let index = pending.popFirst() else { return }
                    let position = count - pending.count
                    group.addTask {
                        let (result, carried) = try await self.produce(
                            plan.steps[index], item: position, of: count,
                            into: builder, transfer: transfer)
                        return (index, result, carried)
                    }
                }
                for _ in 0..<Self.parallelGroups { startNext() }
                while let (index, result, carried) = try await group.next() {
                    installed[carried.package, default: [:]][carried.group] = result
                    done[index] = carried
                    startNext()
                }
            }
            progress(.commit)
            let next = InstalledState(
                version: installed.isEmpty ? nil : plan.version,
                manifest: installed.isEmpty ? nil : manifestSHA,
                generation: builder.number, committed: Date(), packages: installed)
            let fetched = transfer.fetched
            let directory = store.directory
            try await offActor {
                try builder.commit(next)
                for blob in fetched { FileSystem.removeTree(blob) }
                // Resume files of other runs stay for their retry; an empty folder goes.
                FileSystem.removeIfEmptyFolder(directory.resume.path)
            }
            var report = UpdateReport(
                fromVersion: state.version, toVersion: next.version, steps: done,
                downloadedBytes: transfer.downloaded, committed: true,
                seconds: Date().timeIntervalSince(started))
            report.resumedBytes = resumedBytes
            return report
        } catch {
            await FileSystem.removeTreesOffPool([builder.directory])
            guard Self.isNoSpace(error) else { throw error }
            throw await fullDisk(plan)
        }
    }

    /// A disk that filled while `plan` ran: drops this run's downloads too, since keeping
    /// partial files for a resume would keep the disk full, and says the file system is full.
    private func fullDisk(_ plan: Plan) async -> MapLoaderError {
        // Only this plan's blobs: a reader may be fetching a catalog into the same folder.
        let blobs = Set(plan.steps.flatMap { step in [step.artifact?.sha256].compactMap { $0 } + step.patches.map(\.sha256) })
        let directory = store.directory
        _ = try? await offActor {
            for name in blobs { FileSystem.removeTree(directory.download(name)) }
            // Half-built large files kept for a resume are dropped too.
            directory.removeResumeFiles()
        }
        // With the bytes there, what ran out was inodes or a quota: say the file system is full.
        let available = store.availableSpace() ?? 0
        return .insufficientSpace(needed: available > plan.peakBytes ? 0 : plan.peakBytes, available: available, path: store.root.path)
    }

    /// The bytes of work `plan` declares for its overall progress: every download, and
    /// every group's unpacked bytes once per archive or patch that produces them.
    static func work(of plan: Plan) -> Int64 {
        plan.steps.filter { [.install, .update].contains($0.action) }.saturatingSum { step in
            let produced = (step.artifact?.unpackedSize ?? 0).multipliedReportingOverflow(by: Int64(max(1, step.patches.count)))
            return step.downloadBytes.plusSaturating(produced.overflow ? .max : produced.partialValue)
        }
    }

    /// What would make `plan` fit in `available` bytes: installed packages it does not touch
    /// whose removal frees the shortfall (largest first), and the group whose leaving out
    /// brings the peak under what is free (the smallest such saving), with that peak.
    static func waysToFit(_ plan: Plan, state: InstalledState, available: Int64) -> [String] {
        let shortfall = plan.peakBytes - available
        var ways: [String] = []
        let touched = Set(plan.steps.map(\.package))
        let untouched = state.packages.keys.filter { !touched.contains($0) }
            .sorted { (state.size(of: $0), $1) > (state.size(of: $1), $0) }
        var freed: Int64 = 0
        var names: [String] = []
        for id in untouched where freed < shortfall {
            freed += state.size(of: id)
            names.append("\(id) \(ByteFormat.string(state.size(of: id)))")
        }
        if freed >= shortfall, !names.isEmpty { ways.append("uninstall \(names.joined(separator: ", "))") }
        let changing = plan.steps.filter { $0.action == .install || $0.action == .update }
        let cost = { (step: GroupStep) in step.downloadBytes.plusSaturating(step.writeBytes) }
        if changing.count > 1,
            let step = changing.filter({ plan.peakBytes - cost($0) <= available }).min(by: { cost($0) < cost($1) })
        {
            ways.append("leave \(step.name) out of this change (its peak is then \(ByteFormat.string(plan.peakBytes - cost(step))))")
        }
        return ways
    }

    /// How many groups are fetched and produced at once.
    static let parallelGroups = 3

    /// Whether `error` is the file system running out of space (blocks, inodes or quota).
    static func isNoSpace(_ error: any Error) -> Bool {
        if case MapLoaderError.insufficientSpace = error { return true }
        return MapLoaderError.isNoSpace(error)
    }

    /// Produces one group's target files in the new generation: by patch chain when the
    /// plan says so (falling back to the full archive on any failure), else by archive.
    /// - Parameter item: the step's 1-based position among the `items` groups produced.
    private func produce(
        _ step: GroupStep, item: Int, of items: Int, into builder: GenerationBuilder,
        transfer: TransferLedger
    ) async throws -> (InstalledGroup, GroupStep) {
        guard let artifact = step.artifact else {
            throw MapLoaderError.invalidMetadata(what: step.name, detail: "no artifact to install")
        }
        var record = step  // what the report says of this step: the planned one, or its fallback
        if step.method == .delta {
            do {
                let files = try await applyChain(step, item: item, of: items, into: builder, transfer: transfer)
                return (
                    InstalledGroup(
                        artifact: artifact.sha256, treeHash: artifact.treeHash, files: files.count,
                        size: files.reduce(0) { $0 + $1.size }), step
                )
            } catch {
                // A network the policy leaves out refuses the archive as it refused the patch.
                if error is CancellationError || (error as? MapLoaderError) == .cancelled || Self.isNoSpace(error) {
                    throw error
                }
                if case .networkNotAllowed? = error as? MapLoaderError { throw error }
                await FileSystem.removeTreesOffPool([
                    builder.directory.appendingPathComponent(step.package).appendingPathComponent(step.group)
                ])
                // A patch that does not apply or does not verify is named as such, not as storage.
                let failure =
                    error is MapLoaderError || error is SystemError
                    ? MapLoaderError(error) : .integrityFailed(what: "the patch chain of \(step.name)", detail: "\(error)")
                record = step.fellBack(after: failure)
                transfer.addToTotal(artifact.size)
                hub.addWork(artifact.size.plusSaturating(artifact.unpackedSize))
                hub.emit(.planned(record))
            }
        }
        if case .success(let client) = site, let tree = client.source.tree(artifact.treeHash) {
            // An exported site carries the group's files themselves, pinned by the tree hash.
            transfer.addToTotal(-artifact.size)
            return (try await copyTree(tree, for: step, artifact: artifact, item: item, of: items, into: builder), record)
        }
        let archive = try await fetchBlob(
            sha256: artifact.sha256, size: artifact.size, item: step.name,
            index: item, of: items, transfer: transfer)
        let folder = try builder.makeGroupDirectory(package: step.package, group: step.group)
        let report = extractionProgress(of: step, artifact: artifact, item: item, of: items)
        let files: [FileEntry]
        do {
            files = try await offActor {
                try ArchiveExtractor.extract(
                    archive, into: folder, limits: .init(files: artifact.files, bytes: artifact.unpackedSize),
                    progress: report, isCancelled: { Task.isCancelled })
            }
        } catch let refusal as ArchiveExtractor.Refusal {
            FileSystem.removeTree(archive)
            throw MapLoaderError.invalidArchive(package: step.package, group: step.group, detail: refusal.description)
        }
        let treeHash = TreeHash.of(files)
        guard treeHash == artifact.treeHash, files.count == artifact.files else {
            FileSystem.removeTree(archive)
            throw MapLoaderError.integrityFailed(
                what: "\(step.name) files",
                detail: "unpacked tree hash \(treeHash.prefix(12))… differs from the manifest's \(artifact.treeHash.prefix(12))…")
        }
        try builder.writeIndex(files, package: step.package, group: step.group)
        return (
            InstalledGroup(
                artifact: artifact.sha256, treeHash: treeHash, files: files.count,
                size: files.reduce(0) { $0 + $1.size }), record
        )
    }

    /// Announces the extract phase of `step` and returns the callback that reports its bytes
    /// (called on the blocking-work threads).
    private func extractionProgress(of step: GroupStep, artifact: Artifact, item: Int, of items: Int) -> @Sendable (Int64) -> Void {
        progress(.extract, total: artifact.unpackedSize, items: item - 1, totalItems: items, item: step.name)
        let (hub, operation, name) = (self.hub, self.operation, step.name)
        return { written in
            hub.progress(
                operation, .extract, bytes: written, total: artifact.unpackedSize, items: item - 1, totalItems: items, item: name)
        }
    }

    /// Copies a group's files from an exported site's tree folder, hashing them, and checks
    /// them against the manifest's tree hash.
    private func copyTree(
        _ tree: URL, for step: GroupStep, artifact: Artifact, item: Int, of items: Int,
        into builder: GenerationBuilder
    ) async throws -> InstalledGroup {
        let folder = try builder.makeGroupDirectory(package: step.package, group: step.group)
        let report = extractionProgress(of: step, artifact: artifact, item: item, of: items)
        let files: [FileEntry]
        do {
            files = try await offActor {
                try TreeCopy.copy(
                    from: tree, into: folder, limits: .init(files: artifact.files, bytes: artifact.unpackedSize),
                    progress: report, isCancelled: { Task.isCancelled })
            }
        } catch let refusal as ArchiveExtractor.Refusal {
            throw MapLoaderError.invalidArchive(package: step.package, group: step.group, detail: refusal.description)
        }
        let treeHash = TreeHash.of(files)
        guard treeHash == artifact.treeHash, files.count == artifact.files else {
            throw MapLoaderError.integrityFailed(
                what: "\(step.name) files at \(tree.path)",
                detail: "tree hash \(treeHash.prefix(12))… differs from the manifest's \(artifact.treeHash.prefix(12))…")
        }
        try builder.writeIndex(files, package: step.package, group: step.group)
        return InstalledGroup(
            artifact: artifact.sha256, treeHash: treeHash, files: files.count,
            size: files.reduce(0) { $0 + $1.size })
    }

    /// Downloads a pinned blob into `downloads/<sha256>` (resuming a partial file, reusing
    /// a complete one) and checks its SHA-256.
    func fetchBlob(
        sha256: String, size: Int64, item: String, index: Int, of items: Int,
        transfer: TransferLedger
    ) async throws -> URL {
        let task =
            blobFetches[sha256]
            ?? Task {
                try await self.downloadBlob(sha256: sha256, size: size, item: item, index: index, of: items, transfer: transfer)
            }
        blobFetches[sha256] = task
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    private func downloadBlob(
        sha256: String, size: Int64, item: String, index: Int, of items: Int,
        transfer: TransferLedger
    ) async throws -> URL {
        let file = store.directory.download(sha256)
        let client = try site.get()
        // With mirrors, bytes that fail the pinned hash are fetched again from the next
        // mirror (from scratch: the bad bytes could be anywhere in the file).
        do {
            return try await client.source.failingOver { source in
                try await self.fetchVerified(
                    sha256: sha256, size: size, into: file, from: source, item: item, index: index, of: items,
                    transfer: transfer)
            }
        } catch {
            blobFetches[sha256] = nil
            throw error
        }
    }

    /// Downloads the blob from `source` into `file` (continuing what it holds) and checks
    /// its pinned SHA-256 and size; bytes that fail are removed.
    private func fetchVerified(
        sha256: String, size: Int64, into file: URL, from source: any SiteSource, item: String, index: Int,
        of items: Int, transfer: TransferLedger
    ) async throws(MapLoaderError) -> URL {
        let already = min(size, FileStatus.of(file.path)?.size ?? 0)
        let hub = self.hub
        let operation = self.operation
        let completed = transfer.record(sha256, bytes: already)
        progress(.download, bytes: completed, total: transfer.total, items: index - 1, totalItems: items, item: item)
        try await source.download(SiteLayout.blob(sha256), to: file, limit: .exactly(size)) { bytes in
            let completed = transfer.record(sha256, bytes: bytes)
            hub.progress(operation, .download, bytes: completed, total: transfer.total, items: index - 1, totalItems: items, item: item)
        }
        transfer.finished(file, new: size - already)
        progress(.verify, items: index - 1, totalItems: items, item: item)
        let actual: (hex: String, size: Int64)
        do {
            let hash = try await offActor { try FileHashing.sha256(ofFileAt: file) }
            actual = (hash.hex, hash.size)
        } catch {
            throw MapLoaderError(error)
        }
        if actual.hex == sha256, actual.size == size { return file }
        FileSystem.removeTree(file)
        // The bytes fetched so far are gone: the next mirror's count starts again.
        _ = transfer.record(sha256, bytes: 0)
        throw MapLoaderError.integrityFailed(
            what: source.describe(SiteLayout.blob(sha256)) + " (\(item))",
            detail: "SHA-256 is \(actual.hex.prefix(12))…, the manifest pins \(sha256.prefix(12))…")
    }
}
