import Foundation
import MapTestSupport
import Synchronization
import Testing

@testable import MapLoader

/// Handles per operation: pause keeps the partial file, resume continues with Range.
@Suite struct OperationHandleTests {
    @Test func pauseKeepsThePartialFileAndResumeContinuesWithRange() async throws {
        // A slow server, so the download is surely in the middle when paused.
        let site = try TestSite(faults: FaultPlan(bytesPerSecond: 8_000))
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        let blob = try #require(try site.manifest("v1").root.allNodes.first { $0.id == "de-berlin" }?.artifacts?["base"])
        let partial = data.appendingPathComponent("downloads/\(blob.sha256)")
        // The pause comes from the progress callback itself, a third of the way in, so it
        // lands mid-download however busy the machine is.
        let pauser = PauseAtBytes(blob.size / 3)
        await loader.setSynchronousDelegate(pauser)
        let handle = loader.start { try await $0.install(["de-berlin"]) }
        pauser.handle.withLock { $0 = handle }
        try await RawThread.run { try waitUntil { handle.isPaused } }
        try await RawThread.run { try waitUntil { handle.requestsInFlight == 0 } }
        let kept = try #require(FileStatus.of(partial.path)?.size)
        #expect(kept > 0 && kept < blob.size)
        let sentBeforeResume = site.server.statistics.bodyBytesSentByPath["/" + SiteLayout.blob(blob.sha256)] ?? 0
        // Paused: nothing more arrives while time passes (the rest of this blob takes the
        // server a few milliseconds, so a transfer that kept going would have grown it).
        // The server may still finish writing what it had in flight; the file is what counts.
        try await Task.sleep(for: .milliseconds(400))
        #expect(FileStatus.of(partial.path)?.size == kept)
        handle.resume()
        let report = try await handle.value
        #expect(report.committed)
        #expect(try await loader.verify().ok)
        let statistics = site.server.statistics
        // The rest came with Range (206) from where the kept file ended: the server sent the
        // blob once, plus at most what was on the wire when the pause cut the request (a
        // restart from zero would have sent the kept part again).
        #expect(statistics.statusCounts[206, default: 0] >= 1)
        let sent = try #require(statistics.bodyBytesSentByPath["/" + SiteLayout.blob(blob.sha256)])
        #expect(sent >= blob.size && sent < blob.size + kept)
        #expect(sentBeforeResume >= kept)
    }

    @Test func cancellingAHandleChangesNothing() async throws {
        let site = try TestSite(faults: FaultPlan(bytesPerSecond: 8_000))
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        let handle = loader.start { try await $0.install(["de-berlin"]) }
        handle.pause()  // paused before it even started: it waits
        try await RawThread.run { try waitUntil { FileManager.default.fileExists(atPath: data.appendingPathComponent("locks").path) } }
        handle.cancel()
        await #expect(throws: MapLoaderError.cancelled) { try await handle.value }
        #expect(try Store(root: data).state().packages.isEmpty)
        // The loader goes on with the next operation.
        try await loader.install(["ch"])
    }
}

/// A delegate that pauses an operation once its downloads pass `threshold` bytes.
final class PauseAtBytes: MapLoaderDelegate, Sendable {
    let threshold: Int64
    let handle = Mutex<OperationHandle<UpdateReport>?>(nil)
    private let fired = Mutex(false)

    init(_ threshold: Int64) { self.threshold = threshold }

    func mapLoader(_ loader: MapLoader, didReceive event: MapLoaderEvent) {
        guard case .progress(let progress) = event, progress.phase == .download, progress.completedBytes >= threshold else { return }
        // On a busy machine the operation may pass the threshold before the test holds its
        // handle, and a small file may then finish with no later event: this synchronous
        // delegate holds the download back until the handle is there.
        let deadline = Date().addingTimeInterval(60)
        while handle.withLock({ $0 == nil }), Date() < deadline { usleep(1_000) }
        handle.withLock { handle in
            guard let handle else { return }
            fired.withLock { fired in
                if !fired { handle.pause() }
                fired = true
            }
        }
    }
}

/// Waits (on a thread of its own) until `condition` holds; fails after 300 s as a guard
/// against a hang, never as a measure of speed.
func waitUntil(_ condition: () -> Bool) throws {
    let deadline = Date().addingTimeInterval(300)
    while !condition() {
        guard Date() < deadline else { throw CancellationError() }
        usleep(5_000)
    }
}
