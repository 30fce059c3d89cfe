import Foundation
import ManifestServer
import MapTestSupport
import Testing

@testable import MapLoader

/// The actor's queue: one operation at a time, in call order; cancellation changes nothing.
@Suite struct QueueTests {
    /// The second install is called while the first is running (its download has begun,
    /// from a server sending 20 kB/s): it waits, and starts only after the first has ended.
    @Test func operationsRunOneAtATimeInCallOrder() async throws {
        let site = try TestSite(faults: FaultPlan(bytesPerSecond: 20_000))
        let loader = site.loader()
        let log = EventLog()
        let events = loader.events()
        let collector = Task { for await event in events { await log.append(event) } }
        let first = loader.start { try await $0.install(["de-berlin"]) }
        for await progress in first.progress where progress.phase == .download { break }
        let calledWhileRunning = first.latestProgress?.overallFraction ?? 1 < 1
        let second = loader.start { try await $0.install(["ch"]) }
        _ = try await (first.value, second.value)
        #expect(calledWhileRunning, "the first install had finished before the second was called")
        loader.closeEventStreams()
        await collector.value
        let bounds = await log.events.compactMap { event -> String? in
            switch event {
            case .started(let op): return "start \(op.rawValue)"
            case .finished(let op): return "end \(op.rawValue)"
            default: return nil
            }
        }
        #expect(bounds == ["start install", "end install", "start install", "end install"])
        let installed = await log.events.compactMap { if case .installed(let ids) = $0 { return ids } else { return nil } }
        #expect(installed == [["de-berlin"], ["ch"]])
    }

    @Test func cancellingTheRunningOperationChangesNothing() async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["de-berlin"])
        let before = try snapshot(loader.currentFolder)
        // A slow server (2 kB/s) keeps the next install in its download phase long after the
        // cancel, however busy the machine is.
        let slow = ManifestServer(root: site.site, faults: FaultPlan(bytesPerSecond: 2_000))
        let port = try slow.start()
        defer { slow.stop() }
        let throttled = MapLoader(
            configuration: .init(
                server: "http://127.0.0.1:\(port)",
                dataDirectory: loader.configuration.dataDirectory,
                trust: TrustPolicy(keys: [site.publicKey])))
        let events = throttled.events()
        let install = Task { try await throttled.install(["de-hamburg"]) }
        for await event in events {
            if case .progress(let p) = event, p.phase == .download, p.completedBytes > 0 { break }
        }
        await throttled.cancelCurrentOperation()
        do {
            _ = try await install.value
            Issue.record("the cancelled install finished")
        } catch {
            #expect(error as? MapLoaderError == .cancelled)
        }
        #expect(try snapshot(loader.currentFolder) == before)
        // The queue goes on after a cancellation.
        try await throttled.uninstall(["de-berlin"])
        #expect(!FileManager.default.fileExists(atPath: loader.currentFolder.appendingPathComponent("de-berlin").path))
    }
}
