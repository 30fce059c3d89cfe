import Foundation
import MapModel
import MapTestSupport
import MapTransfer
import Synchronization
import Testing

@testable import MapLoader

/// One overall fraction per operation that a progress bar can follow: it never goes
/// backwards, ends at 1, and every event says which operation it belongs to.
@Suite struct ProgressTests {
    /// The progress events of `events`, by operation number, in order.
    static func progressByOperation(_ events: [MapLoaderEvent]) -> [(id: Int, values: [OperationProgress])] {
        var out: [(id: Int, values: [OperationProgress])] = []
        for case .progress(let progress) in events {
            if out.last?.id == progress.operationID {
                out[out.count - 1].values.append(progress)
            } else {
                out.append((progress.operationID, [progress]))
            }
        }
        return out
    }

    static func expectMonotonic(_ values: [OperationProgress], _ what: String) {
        let fractions = values.map(\.overallFraction)
        let backwards = zip(fractions, fractions.dropFirst()).filter { $1 < $0 }
        #expect(backwards.isEmpty, "\(what): overall progress went back \(backwards.prefix(3)) in \(fractions.count) events")
        #expect(fractions.last == 1, "\(what): ends at \(fractions.last ?? -1)")
        #expect(fractions.allSatisfy { (0...1).contains($0) })
    }

    @Test func overallProgressNeverGoesBackOnAnInstallAPatchedUpdateAndAFallback() async throws {
        let site = try TestSite()
        let loader = site.loader()
        let log = EventLog()
        let events = loader.events()
        let collector = Task { for await event in events { await log.append(event) } }
        try await loader.install(["de-berlin", "de-hamburg"])
        try site.publish(2)
        try await loader.performUpdate()
        // v2→v3 with the patch of one group damaged: that group falls back to its archive.
        try site.publish(3)
        let plan = try await loader.checkForUpdate().plan
        let patched = try #require(plan.steps.first { $0.method == .delta && !$0.patches.isEmpty })
        let url = site.site.appendingPathComponent(SiteLayout.blob(try #require(patched.patches.first).sha256))
        var bytes = try Data(contentsOf: url)
        bytes[bytes.count - 3] ^= 0xFF
        try bytes.write(to: url)
        let fallback = try await loader.performUpdate()
        #expect(fallback.steps.contains { $0.reason.contains("fell back") }, "\(fallback.steps.map(\.reason))")
        loader.closeEventStreams()
        await collector.value
        let all = await log.events
        let operations = Self.progressByOperation(all)
        let started = all.compactMap { event -> MapLoaderOperation? in
            if case .started(let operation) = event { return operation }
            return nil
        }
        #expect(started == [.install, .update, .checkForUpdate, .update], "\(started)")
        // Install, update, update (the check reports no progress of its own).
        let withWork = operations.filter { run in run.values.contains { $0.phase == .download } }
        #expect(withWork.count == 3, "\(operations.map { ($0.id, $0.values.count) })")
        #expect(operations.map(\.id) == operations.map(\.id).sorted() && Set(operations.map(\.id)).count == operations.count)
        for (run, name) in zip(withWork, ["install", "patched update", "update with a fallback"]) {
            Self.expectMonotonic(run.values, name)
            // The bar moves through the work, not only at the end.
            let middle = run.values.filter { $0.overallFraction > 0.1 && $0.overallFraction < 0.9 }
            #expect(!middle.isEmpty, "\(name): \(run.values.map(\.overallFraction))")
        }
        // The per-phase fraction of the same events does go back (phases interleave): the
        // overall fraction is what makes a bar usable.
        let phases = withWork.flatMap { $0.values.map(\.fraction) }
        #expect(zip(phases, phases.dropFirst()).contains { $1 < $0 })
    }

    @Test func anOperationHandleReportsItsOwnProgress() async throws {
        let site = try TestSite()
        let loader = site.loader()
        let handle = loader.start { try await $0.install(["de-berlin", "de-hamburg"]) }
        var seen: [OperationProgress] = []
        for await progress in handle.progress { seen.append(progress) }
        _ = try await handle.value
        Self.expectMonotonic(seen, "handle")
        #expect(Set(seen.map(\.operationID)).count == 1)
        #expect(handle.fractionCompleted == 1)
        #expect(handle.latestProgress?.operation == .install)
        // A stream opened after the end yields the last value and ends.
        var late: [OperationProgress] = []
        for await progress in handle.progress { late.append(progress) }
        #expect(late.map(\.overallFraction) == [1])
    }
}

/// The delegate's calls name their loader, so one delegate can serve several.
@Suite struct DelegateTests {
    final class Recorder: MapLoaderDelegate {
        let installs = Mutex<[(ObjectIdentifier, [String])]>([])
        func mapLoader(_ loader: MapLoader, didReceive event: MapLoaderEvent) {
            guard case .installed(let ids) = event else { return }
            installs.withLock { $0.append((ObjectIdentifier(loader), ids)) }
        }
    }

    /// A delegate made in the call is released at once (the loader holds it weakly): that is
    /// said once, on standard error, instead of the app hearing nothing silently.
    @Test func aDelegateReleasedWhileSetIsReportedOnce() async throws {
        let reports = Mutex<[String]>([])
        let slot = DelegateSlot { line in reports.withLock { $0.append(line) } }
        let dir = TemporaryDirectory("released-delegate")
        let loader = MapLoader(configuration: .init(server: nil, dataDirectory: dir.path("data")))
        slot.attach(loader)
        slot.set(Recorder())  // released as soon as the call returns
        slot.call(.started(.install))
        slot.call(.finished(.install))
        #expect(reports.withLock { $0 } == [DelegateSlot.releasedMessage])
        // A delegate kept by its owner, or one unset on purpose, is not reported.
        let kept = Recorder()
        slot.set(kept)
        slot.call(.installed(["de-berlin"]))
        slot.set(nil)
        slot.call(.finished(.install))
        #expect(reports.withLock { $0 }.count == 1)
        #expect(kept.installs.withLock { $0.map(\.1) } == [["de-berlin"]])
    }

    @Test func oneDelegateTellsItsLoadersApart() async throws {
        let site = try TestSite()
        let recorder = Recorder()
        let first = site.loader()
        let second = site.loader()
        await first.setDelegate(recorder)
        await second.setDelegate(recorder)
        try await first.install(["de-berlin"])
        try await second.install(["de-hamburg"])
        let seen = recorder.installs.withLock { $0 }
        #expect(seen.map(\.0) == [ObjectIdentifier(first), ObjectIdentifier(second)])
        #expect(seen.map(\.1) == [["de-berlin"], ["de-hamburg"]])
    }
}

/// The delegate hears every event one call at a time, in the order of the `events()`
/// streams, on the executor the configuration names, before the operation returns.
@Suite struct DelegateOrderTests {
    /// Records every event's description and whether calls overlapped; stops the run when a
    /// call meant for the main actor comes off it.
    final class Recorder: MapLoaderDelegate {
        let seen = Mutex<[String]>([])
        let inFlight = Atomic<Int>(0)
        let overlaps = Atomic<Int>(0)
        /// Whether calls must come on the main actor.
        let mainActor: Bool

        init(mainActor: Bool) { self.mainActor = mainActor }

        func mapLoader(_ loader: MapLoader, didReceive event: MapLoaderEvent) {
            if inFlight.add(1, ordering: .sequentiallyConsistent).newValue > 1 { overlaps.add(1, ordering: .relaxed) }
            if mainActor {
                // Traps off the main actor (on Linux dispatch runs the main queue on whichever
                // thread is free, so the thread says nothing): a failure that stops the run.
                MainActor.assumeIsolated {}
            }
            usleep(20)  // a slow delegate: calls that may overlap get the time to
            seen.withLock { $0.append("\(event)") }
            inFlight.subtract(1, ordering: .sequentiallyConsistent)
        }
    }

    /// An actor an app might isolate its delegate calls to.
    actor Model {}

    /// The descriptions of every event `events` yields until it ends.
    static func descriptions(of events: AsyncStream<MapLoaderEvent>) -> Task<[String], Never> {
        Task {
            var out: [String] = []
            for await event in events { out.append("\(event)") }
            return out
        }
    }

    static func onMainActor(_ delivery: MapLoader.DelegateDelivery) -> Bool {
        if case .mainActor = delivery { true } else { false }
    }

    static let deliveries: [(String, MapLoader.DelegateDelivery)] = [
        ("main actor, run 1", .mainActor), ("main actor, run 2", .mainActor), ("main actor, run 3", .mainActor),
        ("background", .background), ("an actor", .actor(Model())),
    ]

    @Test(arguments: deliveries)
    func callsComeOneAtATimeInTheStreamsOrder(_ name: String, _ delivery: MapLoader.DelegateDelivery) async throws {
        let site = try TestSite()
        let loader = site.loader(delegateDelivery: delivery)
        let recorder = Recorder(mainActor: Self.onMainActor(delivery))
        await loader.setDelegate(recorder)
        let streamed = Self.descriptions(of: loader.events())
        try await loader.install(["de-berlin", "de-hamburg"])
        // Returned: the delegate has had every event of the install, the last included.
        let called = recorder.seen.withLock { $0 }
        loader.closeEventStreams()
        let inStream = await streamed.value
        #expect(called.count > 20, "\(name): \(called.count) calls")
        #expect(called == inStream, "\(name): \(zip(called, inStream).filter { $0 != $1 }.count) positions differ")
        #expect(recorder.overlaps.load(ordering: .relaxed) == 0, "\(name)")
    }
}

extension DelegateOrderTests {
    /// Many threads reporting at once (downloads, unpacking) still give the delegate one call
    /// at a time, in the streams' order, before the operation's end returns.
    @Test(arguments: [("main actor", MapLoader.DelegateDelivery.mainActor), ("background", .background)])
    func manyThreadsReportingAtOnceStillCallTheDelegateInTheStreamsOrder(
        _ name: String, _ delivery: MapLoader.DelegateDelivery
    ) async throws {
        let dir = TemporaryDirectory("delegate-order")
        let loader = MapLoader(configuration: .init(server: nil, dataDirectory: dir.path("data"), delegateDelivery: delivery))
        let recorder = Recorder(mainActor: Self.onMainActor(delivery))
        await loader.setDelegate(recorder)
        let streamed = Self.descriptions(of: loader.events())
        let hub = await loader.hub
        hub.begin(.install, monitor: nil)
        hub.addWork(8 * 100)
        try await RawThread.run {
            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                for step in 1...100 {
                    hub.progress(.install, .download, bytes: Int64(step), total: 100, item: "blob-\(thread)")
                }
            }
        }
        await hub.end(.install, error: nil)
        let called = recorder.seen.withLock { $0 }
        loader.closeEventStreams()
        let inStream = await streamed.value
        #expect(called.count == 803, "\(name): started, 800 reports, the last at 1, finished")
        #expect(called == inStream, "\(name): \(zip(called, inStream).filter { $0 != $1 }.count) positions differ")
        #expect(recorder.overlaps.load(ordering: .relaxed) == 0, "\(name)")
    }
}

/// A change that does not fit says what would make it fit.
@Suite struct SpaceAdviceTests {
    static func group(_ size: Int64) -> InstalledGroup { InstalledGroup(artifact: "a", treeHash: "t", files: 1, size: size) }

    @Test func aRefusalNamesPackagesToUninstallAndAGroupToLeaveOut() {
        let state = InstalledState(
            version: "v1", manifest: nil, generation: 1, committed: Date(),
            packages: [
                "de-berlin": ["base": Self.group(5_000_000)], "nl": ["base": Self.group(3_000_000)],
                "ch": ["base": Self.group(1_000_000)],
            ])
        let plan = Plan(
            version: "v2",
            steps: [
                GroupStep(
                    package: "de-berlin", group: "base", action: .update, method: .full, downloadBytes: 4_000_000, writeBytes: 5_000_000, reason: "r"),
                GroupStep(
                    package: "de-berlin", group: "terrain", action: .install, method: .full, downloadBytes: 1_000_000, writeBytes: 2_000_000,
                    reason: "r"),
            ])
        // Peak 12 MB, 9.5 MB free: nl (3 MB) frees the 2.5 MB short; leaving terrain out peaks at 9 MB.
        let ways = PlanSession.waysToFit(plan, state: state, available: 9_500_000)
        #expect(ways == ["uninstall nl 3.00 MB", "leave de-berlin/terrain out of this change (its peak is then 9.00 MB)"], "\(ways)")
        let error = MapLoaderError.insufficientSpace(needed: plan.peakBytes, available: 9_500_000, path: "/maps", ways: ways)
        #expect(error.description.contains("uninstall nl 3.00 MB; or leave de-berlin/terrain out"), "\(error)")
        // Nothing helps when even both are not enough.
        #expect(PlanSession.waysToFit(plan, state: state, available: 1_000).isEmpty)
    }
}
