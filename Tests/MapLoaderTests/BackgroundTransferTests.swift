import Foundation
import ManifestServer
import MapLoader
import MapPlatform
import MapTestSupport
import MapTransfer
import Synchronization
import Testing

/// The download tasks of a background session (``MapLoader/Configuration/Transport/background(_:discretionary:)``),
/// run here by FoundationNetworking in the process, in an ephemeral session: Linux has no
/// system service that runs them while the app is away, holds them for a network, or
/// gives them back on relaunch, so those parts do not run here. Against a real server on
/// 127.0.0.1: the same bytes in the same windows, and a task left running by a pause that
/// finishes into the stash, from which the resumed download takes its bytes without the
/// server sending one twice.
@Suite(.serialized) struct BackgroundTransferTests {
    /// Counts the completion handler's calls, and checks each comes on the main actor.
    final class Calls: Sendable {
        private let calls = Mutex(0)
        var made: Int { calls.withLock { $0 } }

        @MainActor func count() {
            MainActor.assertIsolated()
            calls.withLock { $0 += 1 }
        }
    }

    static func transport(stash: URL) -> FoundationDownloadTransport {
        FoundationDownloadTransport.shared(
            background: .init(identifier: "tests-\(UUID().uuidString)", discretionary: false), policy: .any, stash: stash)
    }

    static func source(_ port: Int, _ transport: FoundationDownloadTransport, attempts: Int = 3) -> HTTPSource {
        HTTPSource(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!, retry: RetryPolicy(attempts: attempts, initialDelay: 0.2, maxDelay: 0.5),
            deadlines: TransferDeadlines(stall: 10, minimumRate: 0, rateWindow: 60, total: nil), transport: transport)
    }

    /// A loader configured for a background session installs (here, without one, through
    /// Foundation's data tasks; on Apple platforms through the session's download tasks).
    @Test func anInstallThroughABackgroundSessionLandsTheSameBytes() async throws {
        let site = try TestSite()
        try await TransportTests.installLandsTheRelease(site, server: site.url, transport: .background("tests-install"))
    }

    /// An install and a delta update with every file through download tasks (as a
    /// background session on Apple platforms runs them) land the release's bytes.
    @Test func anInstallAndAnUpdateThroughDownloadTasksLandTheReleases() async throws {
        let site = try TestSite(revisions: [1], patchDepth: 1)
        let dir = TemporaryDirectory()
        let source = HTTPSource(
            baseURL: try #require(URL(string: site.url)), retry: RetryPolicy(attempts: 3, initialDelay: 0.2, maxDelay: 0.5),
            deadlines: TransferDeadlines(stall: 10, minimumRate: 0, rateWindow: 60, total: nil),
            transport: Self.transport(stash: dir.path("stash")))
        let loader = MapLoader(
            configuration: .init(server: nil, dataDirectory: dir.path("data"), trust: TrustPolicy(keys: [site.publicKey])), source: source)
        try await loader.install(["de-berlin"])
        #expect(try snapshot(loader.currentFolder.appendingPathComponent("de-berlin/base")) == snapshot(site.release(1, "de-berlin", "base")))
        try site.publish(2, patchDepth: 1)
        let report = try await loader.performUpdate()
        #expect(report.toVersion == "v2" && report.steps.contains { $0.method == .delta }, "\(report.steps)")
        #expect(try snapshot(loader.currentFolder.appendingPathComponent("de-berlin/base")) == snapshot(site.release(2, "de-berlin", "base")))
    }

    /// 20 MB in three windows of 8 MiB, each a download task whose file is handed over
    /// when it ends; no byte twice.
    @Test func aLargeFileComesInWindowsOfDownloadTasks() async throws {
        let dir = TemporaryDirectory()
        let (folder, path, sha256) = try TransportTests.bigFile(20_000_000, in: dir)
        let server = ManifestServer(root: folder)
        let port = try server.start()
        defer { server.stop() }
        let file = dir.path("download")
        let transport = Self.transport(stash: dir.path("stash"))
        try await Self.source(port, transport).download(path, to: file, limit: .exactly(20_000_000)) { _ in }
        #expect(try FileHashing.sha256(of: Data(contentsOf: file)) == sha256)
        #expect(server.statistics.bodyBytesSent == 20_000_000, "no byte twice")
        #expect(server.statistics.requests == 3, "\(server.statistics.statusCounts)")
    }

    /// A pause while a window's task runs lets the task finish by itself (as the system
    /// finishes it while an app is suspended); its file waits in the stash, and the resumed
    /// download takes that window from there: the server sends each byte once.
    @Test func aTaskLeftRunningByAPauseFinishesIntoTheStashAndTheResumeTakesItFromThere() async throws {
        let dir = TemporaryDirectory()
        let size = 20_000_000
        let (folder, path, sha256) = try TransportTests.bigFile(size, in: dir)
        // 4 MB/s: a window's task runs about two seconds.
        let server = ManifestServer(root: folder, faults: FaultPlan(bytesPerSecond: 4_000_000))
        let port = try server.start()
        defer { server.stop() }
        let stash = dir.path("stash")
        let control = TransferControl()
        let source = Self.source(port, Self.transport(stash: stash)).controlled(by: control)
        let file = dir.path("download")
        let download = Task { try await source.download(path, to: file, limit: .exactly(Int64(size))) { _ in } }
        // Paused once the second window's request is under way (the first is in the file).
        let paused = try await RawThread.value {
            let patience = ContinuousClock.now + .seconds(120)
            while server.statistics.requests < 2 || (FileStatus.of(file.path)?.size ?? 0) < 8 << 20, ContinuousClock.now < patience {
                usleep(2_000)
            }
            control.pause()
            while control.requestsInFlight > 0, ContinuousClock.now < patience { usleep(2_000) }
            return FileStatus.of(file.path)?.size
        }
        #expect(paused == 8 << 20, "paused after the first window")
        // The second window's task goes on alone and lands in the stash.
        let kept = try await RawThread.value {
            let patience = ContinuousClock.now + .seconds(120)
            while !FileSystem.names(in: stash.path).contains(where: { $0.hasSuffix(".json") }), ContinuousClock.now < patience {
                usleep(10_000)
            }
            return FileSystem.names(in: stash.path).filter { !$0.hasPrefix(".") }.count
        }
        #expect(kept == 2, "the window's head and body are kept")
        #expect(FileStatus.of(file.path)?.size == 8 << 20, "the file waits for the resume")
        control.resume()
        try await download.value
        #expect(try FileHashing.sha256(of: Data(contentsOf: file)) == sha256)
        #expect(server.statistics.bodyBytesSent == Int64(size), "no byte twice: \(server.statistics.bodyBytesSent)")
        #expect(server.statistics.requests == 3, "the stashed window was not asked for again")
        #expect(FileSystem.names(in: stash.path).isEmpty, "the stash gave its entry up")
    }

    /// A stash entry answers only the request it was made for, whole, once; entries too
    /// old go.
    @Test func theStashAnswersItsOwnRequestOnce() throws {
        let dir = TemporaryDirectory()
        let stash = DownloadStash(folder: dir.path("stash"))
        let url = URL(string: "http://127.0.0.1:9/big.bin")!
        let request = DownloadStash.request(url, headers: [("Range", "bytes=0-99"), ("If-Range", "\"v1\"")])
        let body = dir.path("body")
        try Data(repeating: 7, count: 100).write(to: body)
        try stash.put(body, head: ResponseHead(status: 206, contentLength: 100, contentRange: "bytes 0-99/300", etag: "\"v1\""), request: request)
        #expect(stash.take(DownloadStash.request(url, headers: [("Range", "bytes=100-199")])) == nil, "another window")
        let entry = try #require(stash.take(request))
        #expect(entry.head == ResponseHead(status: 206, contentLength: 100, contentRange: "bytes 0-99/300", etag: "\"v1\""))
        #expect(try Data(contentsOf: entry.body) == Data(repeating: 7, count: 100))
        #expect(stash.take(request) == nil, "taken once")
        FileSystem.remove(entry.body.path)
        // Only an answer to a closed window, and no longer than it, is kept.
        try Data(repeating: 1, count: 10).write(to: body)
        #expect(try !stash.put(body, head: ResponseHead(status: 200), request: DownloadStash.request(url, headers: [])))
        #expect(try !stash.put(body, head: ResponseHead(status: 200), request: DownloadStash.request(url, headers: [("Range", "bytes=5-")])))
        #expect(try !stash.put(body, head: ResponseHead(status: 206), request: DownloadStash.request(url, headers: [("Range", "bytes=0-8")])))
        #expect(FileSystem.names(in: stash.folder.path).isEmpty)
        #expect(try stash.put(body, head: ResponseHead(status: 200), request: request))
        stash.expire(now: Date().addingTimeInterval(DownloadStash.maximumAge + 60))
        #expect(FileSystem.names(in: stash.folder.path).isEmpty)
    }

    /// The app delegate's hook: the completion handler waits for the session's last event
    /// and comes on the main actor; a session of another identifier is not this loader's.
    /// (Fake: the system's call of `urlSessionDidFinishEvents`, which only Apple's
    /// background service makes, is made by the test.)
    @Test func theAppDelegatesHandlerComesOnceTheSessionsEventsAreDelivered() async throws {
        // The system's end of events a moment before the handler came (a wake's order)
        // calls it at once.
        let early = Calls()
        BackgroundEvents.finished("tests-hook-late")
        BackgroundEvents.store("tests-hook-late") { early.count() }
        for _ in 0..<1000 where early.made == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(early.made == 1)

        let dir = TemporaryDirectory()
        let loader = MapLoader(
            configuration: .init(server: nil, dataDirectory: dir.path("data"), transport: .background("tests-hook")))
        let calls = Calls()
        let another = loader.handleEventsForBackgroundURLSession("another-library") { calls.count() }
        let ours = loader.handleEventsForBackgroundURLSession("tests-hook") { calls.count() }
        #expect(!another && ours)
        try await Task.sleep(for: .milliseconds(100))
        #expect(calls.made == 0, "not before the events are delivered")
        BackgroundEvents.finished("tests-hook")
        for _ in 0..<1000 where calls.made == 0 { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(calls.made == 1)
    }
}
