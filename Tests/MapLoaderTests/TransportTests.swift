import Foundation
import ManifestServer
import MapLoader
import MapTestSupport
import Synchronization
import Testing

/// Each HTTP transport this build has (libcurl on Linux, Foundation's URLSession
/// everywhere), chosen in the configuration whatever `MAPLOADER_TRANSPORT` says, against a
/// real server on 127.0.0.1: the same bytes, in the requests the transport should make, and
/// a server killed mid-download resumed without a byte sent twice (counted by the server).
@Suite(.serialized) struct TransportTests {
    static let transports = MapLoader.Configuration.Transport.available

    /// A folder with one file of `size` random bytes, its path and its SHA-256.
    static func bigFile(_ size: Int, in dir: TemporaryDirectory) throws -> (folder: URL, path: String, sha256: String) {
        let folder = dir.path("site")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // Random bytes, eight at a time.
        var generator = SystemRandomNumberGenerator()
        let words = (0..<(size + 7) / 8).map { _ in generator.next() as UInt64 }
        let bytes = words.withUnsafeBytes { Data($0.prefix(size)) }
        try bytes.write(to: folder.appendingPathComponent("big.bin"))
        return (folder, "big.bin", FileHashing.sha256(of: bytes))
    }

    static func source(_ url: URL, _ transport: MapLoader.Configuration.Transport, attempts: Int = 3) throws -> HTTPSource {
        HTTPSource(
            baseURL: url, retry: RetryPolicy(attempts: attempts, initialDelay: 0.2, maxDelay: 0.5),
            deadlines: TransferDeadlines(stall: 10, minimumRate: 0, rateWindow: 60, total: nil),
            transport: try #require(HTTPTransports.named(transport.name)))
    }

    /// An install through the configuration's transport lands the release's bytes.
    @Test(arguments: transports)
    func anInstallThroughTheTransportLandsTheSameBytes(_ transport: MapLoader.Configuration.Transport) async throws {
        let site = try TestSite()
        try await Self.installLandsTheRelease(site, server: site.url, transport: transport)
    }

    /// Installs de-berlin from `server` (serving `site`) through `transport` and checks
    /// that the release's bytes landed.
    static func installLandsTheRelease(_ site: TestSite, server: String, transport: MapLoader.Configuration.Transport) async throws {
        let dir = TemporaryDirectory()
        let loader = MapLoader(
            configuration: .init(
                server: server, dataDirectory: dir.path("data"), trust: TrustPolicy(keys: [site.publicKey]), transport: transport))
        _ = try await loader.install(["de-berlin"])
        #expect(try snapshot(loader.currentFolder.appendingPathComponent("de-berlin/base")) == snapshot(site.release(1, "de-berlin", "base")))
    }

    /// libcurl fetches a 20 MB file in one request; URLSession in 8 MiB `Range` windows
    /// (three requests), which bound what it buffers.
    @Test(arguments: transports)
    func aLargeFileComesInTheTransportsRequests(_ transport: MapLoader.Configuration.Transport) async throws {
        let dir = TemporaryDirectory()
        let (folder, path, sha256) = try Self.bigFile(20_000_000, in: dir)
        let server = ManifestServer(root: folder)
        let port = try server.start()
        defer { server.stop() }
        let file = dir.path("download")
        try await Self.source(URL(string: "http://127.0.0.1:\(port)")!, transport).download(path, to: file, limit: .exactly(20_000_000)) { _ in }
        #expect(try FileHashing.sha256(of: Data(contentsOf: file)) == sha256)
        let statistics = server.statistics
        #expect(statistics.bodyBytesSent == 20_000_000, "no byte twice")
        #expect(statistics.requests == (transport == .foundation ? 3 : 1), "\(statistics.statusCounts)")
    }

    /// A real `maploader serve`, killed with SIGKILL mid-download and started again on its
    /// port: the download resumes with `Range` where the partial file ends, and the new
    /// server sends exactly the bytes the client did not have (its request log counts them).
    @Test(arguments: transports)
    func aServerKilledMidDownloadResumesWithoutAByteTwice(_ transport: MapLoader.Configuration.Transport) async throws {
        let dir = TemporaryDirectory()
        let size = 6_000_000
        let (folder, path, sha256) = try Self.bigFile(size, in: dir)
        let first = try CLI.start(["serve", folder.path, "--port", "0", "--json", "--throttle", "1000000"])
        defer { if first.0.isRunning { first.0.terminate() } }
        var announced = ""
        for _ in 0..<500 where !announced.contains("}") {
            announced = (try? String(contentsOf: first.output, encoding: .utf8)) ?? ""
            usleep(20_000)
        }
        let port = try #require(announced.firstMatch(of: /"port"\s*:\s*(\d+)/).flatMap { Int($0.1) })
        let file = dir.path("download")
        let source = try Self.source(URL(string: "http://127.0.0.1:\(port)")!, transport, attempts: 20)
        let download = Task { try await source.download(path, to: file, limit: .exactly(Int64(size))) { _ in } }
        // Once 1 MB is in (of 6 MB at 1 MB/s), the server dies (within a minute, or the test
        // fails), watched from a thread of its own: a busy cooperative pool cannot delay the kill.
        let server = first.0
        try await RawThread.value {
            let patience = ContinuousClock.now + .seconds(60)
            while (FileStatus.of(file.path)?.size ?? 0) < 1_000_000, ContinuousClock.now < patience { usleep(2_000) }
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        // What the socket held reaches the file: wait until it stops growing.
        var kept: Int64 = -1
        while kept != (FileStatus.of(file.path)?.size ?? 0) {
            kept = FileStatus.of(file.path)?.size ?? 0
            try await Task.sleep(for: .milliseconds(300))
        }
        #expect(kept >= 1_000_000, "the download began")
        #expect(kept < Int64(size))
        let second = try CLI.start(["serve", folder.path, "--port", "\(port)"])
        defer {
            second.0.terminate()
            second.0.waitUntilExit()
        }
        try await download.value
        #expect(try FileHashing.sha256(of: Data(contentsOf: file)) == sha256)
        // The restarted server's log: one line per answered request, `GET /big.bin 206 <bytes>B`.
        // A line is written after its response is sent: wait for the bytes to add up (10 s at most).
        var log = ""
        var sent: Int64 = 0
        for _ in 0..<100 where sent != Int64(size) - kept {
            log = (try String(contentsOf: second.output, encoding: .utf8)) + (try String(contentsOf: second.errors, encoding: .utf8))
            sent = log.matches(of: /GET \/big\.bin (\d+) (\d+)B/).reduce(Int64(0)) { $0 + (Int64($1.2) ?? 0) }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(sent == Int64(size) - kept, "the restarted server sent \(sent) bytes; the client missed \(Int64(size) - kept)\n\(log)")
    }

    /// A pause stops the request at the next byte with either transport: the partial file
    /// holds exactly what had come when the pause was asked for, and stays so, and the
    /// resumed download completes it. (A pause checked only at the transport's tick, four
    /// times a second for URLSession, let the file grow to the end of its window meanwhile;
    /// a CI run under load saw a whole blob land after its pause.)
    @Test(arguments: transports)
    func aPauseStopsTheFileAtTheByteItCameAt(_ transport: MapLoader.Configuration.Transport) async throws {
        let dir = TemporaryDirectory()
        let size = 20_000_000
        let (folder, path, sha256) = try Self.bigFile(size, in: dir)
        // At full speed on 127.0.0.1, as a busy URLSession delivers what it queued: many
        // pieces between two ticks.
        let server = ManifestServer(root: folder)
        let port = try server.start()
        defer { server.stop() }
        let control = TransferControl()
        let source = try Self.source(URL(string: "http://127.0.0.1:\(port)")!, transport).controlled(by: control)
        let pausedAt = Mutex<Int64?>(nil)
        let file = dir.path("download")
        let download = Task {
            try await source.download(path, to: file, limit: .exactly(Int64(size))) { offset in
                guard offset >= 2_000_000 else { return }
                pausedAt.withLock { pausedAt in
                    guard pausedAt == nil else { return }
                    control.pause()
                    pausedAt = offset
                }
            }
        }
        let kept = try await RawThread.value {
            let patience = ContinuousClock.now + .seconds(120)
            while pausedAt.withLock({ $0 }) == nil || control.requestsInFlight > 0, ContinuousClock.now < patience { usleep(2_000) }
            return pausedAt.withLock { $0 }
        }
        #expect(kept != nil && control.requestsInFlight == 0, "paused within two minutes")
        #expect(FileStatus.of(file.path)?.size == kept, "not a byte after the pause")
        try await Task.sleep(for: .milliseconds(500))
        #expect(FileStatus.of(file.path)?.size == kept, "nor later")
        control.resume()
        try await download.value
        #expect(try FileHashing.sha256(of: Data(contentsOf: file)) == sha256)
        #expect(server.statistics.statusCounts[206, default: 0] >= 1, "resumed with Range: \(server.statistics.statusCounts)")
    }

    /// A file replaced on the server between two windows of one download: each window asks
    /// with the entity tag of the one before (`If-Range`), so the server sends the new file
    /// whole and the client never splices old and new bytes.
    @Test func aFileReplacedBetweenWindowsIsNotSpliced() async throws {
        let dir = TemporaryDirectory()
        let size = 24_000_000
        let (folder, path, oldSHA) = try Self.bigFile(size, in: dir)
        let replacement = TemporaryDirectory()
        let (newFolder, _, newSHA) = try Self.bigFile(size, in: replacement)
        let server = ManifestServer(root: folder, faults: FaultPlan(bytesPerSecond: 8_000_000))
        let port = try server.start()
        defer { server.stop() }
        let file = dir.path("download")
        let source = try Self.source(URL(string: "http://127.0.0.1:\(port)")!, .foundation)
        let download = Task { try await source.download(path, to: file, limit: .exactly(Int64(size))) { _ in } }
        // The first 8 MiB window is in: the file changes (a new inode, another modification time).
        let patience = ContinuousClock.now + .seconds(60)
        while (FileStatus.of(file.path)?.size ?? 0) < 8 << 20, ContinuousClock.now < patience {
            try await Task.sleep(for: .milliseconds(5))
        }
        try await Task.sleep(for: .milliseconds(20))
        #expect(rename(newFolder.appendingPathComponent(path).path, folder.appendingPathComponent(path).path) == 0)
        try await download.value
        let got = try FileHashing.sha256(of: Data(contentsOf: file))
        #expect(got == newSHA || got == oldSHA, "old and new bytes spliced")
        #expect(server.statistics.statusCounts[200, default: 0] >= 1, "the changed file came whole: \(server.statistics.statusCounts)")
    }

    /// With the unmetered policy, a download on a cellular network is refused before any
    /// request (nothing reaches the server); one that moves to cellular between windows
    /// stops there, keeping its bytes, and the same call back on Wi-Fi continues without a
    /// byte sent twice. The cellular network is a fake (the conditions the source reads),
    /// the server and transfers are real.
    @Test func aDownloadStopsWhenTheNetworkTurnsCellularAndGoesOnAfter() async throws {
        let dir = TemporaryDirectory()
        let size = 20_000_000
        let (folder, path, sha256) = try Self.bigFile(size, in: dir)
        let server = ManifestServer(root: folder)
        let port = try server.start()
        defer { server.stop() }
        let cellular = NetworkConditions(interface: "wwan0", expensive: true)
        let wifi = NetworkConditions(interface: "wlan0", expensive: false)
        let file = dir.path("download")
        // Cellular from the start: refused, and no request was made.
        let onCellular = HTTPSource(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!, retry: RetryPolicy(attempts: 3, initialDelay: 0.2, maxDelay: 0.5),
            deadlines: TransferDeadlines(stall: 10, minimumRate: 0, rateWindow: 60, total: nil),
            transport: try #require(HTTPTransports.named("foundation")), policy: NetworkPolicy(allowsExpensive: false),
            conditions: { cellular })
        await #expect(throws: MapLoaderError.networkNotAllowed(reason: "the default route goes through wwan0, a cellular (metered) network")) {
            try await onCellular.download(path, to: file, limit: .exactly(Int64(size))) { _ in }
        }
        #expect(server.statistics.requests == 0)
        // Wi-Fi for the first window only.
        let windows = Mutex(0)
        let moving = HTTPSource(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!, retry: RetryPolicy(attempts: 3, initialDelay: 0.2, maxDelay: 0.5),
            deadlines: TransferDeadlines(stall: 10, minimumRate: 0, rateWindow: 60, total: nil),
            transport: try #require(HTTPTransports.named("foundation")), policy: NetworkPolicy(allowsExpensive: false),
            conditions: {
                windows.withLock {
                    $0 += 1
                    return $0
                } > 1 ? cellular : wifi
            })
        await #expect(throws: MapLoaderError.networkNotAllowed(reason: "the default route goes through wwan0, a cellular (metered) network")) {
            try await moving.download(path, to: file, limit: .exactly(Int64(size))) { _ in }
        }
        #expect(FileStatus.of(file.path)?.size == 8 << 20, "the first window was kept")
        let back = HTTPSource(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!, retry: RetryPolicy(attempts: 3, initialDelay: 0.2, maxDelay: 0.5),
            deadlines: TransferDeadlines(stall: 10, minimumRate: 0, rateWindow: 60, total: nil),
            transport: try #require(HTTPTransports.named("foundation")), policy: NetworkPolicy(allowsExpensive: false),
            conditions: { wifi })
        try await back.download(path, to: file, limit: .exactly(Int64(size))) { _ in }
        #expect(try FileHashing.sha256(of: Data(contentsOf: file)) == sha256)
        #expect(server.statistics.bodyBytesSent == Int64(size), "no byte twice")
    }

    /// A network the policy leaves out is the device's state, not a bad mirror: a mirrored
    /// site does not walk its mirrors for it (no "trying mirror" event), and says why once.
    @Test func aRefusedNetworkDoesNotFailOverToMirrors() async throws {
        let dir = TemporaryDirectory()
        let (folder, path, _) = try Self.bigFile(100_000, in: dir)
        let server = ManifestServer(root: folder)
        let port = try server.start()
        defer { server.stop() }
        let mirrors = (0..<2).map { _ in
            HTTPSource(
                baseURL: URL(string: "http://127.0.0.1:\(port)")!, retry: RetryPolicy(attempts: 1, initialDelay: 0.1, maxDelay: 0.1),
                deadlines: TransferDeadlines(stall: 10, minimumRate: 0, rateWindow: 60, total: nil),
                policy: .unmetered, conditions: { NetworkConditions(interface: "wwan0", expensive: true) })
        }
        let failovers = Mutex(0)
        let site = MirroredSource(mirrors) { _, _, _ in failovers.withLock { $0 += 1 } }
        await #expect(throws: MapLoaderError.networkNotAllowed(reason: "the default route goes through wwan0, a cellular (metered) network")) {
            try await site.fetchPinned(path, size: 100_000, sha256: String(repeating: "0", count: 64), pinnedBy: "test", scratch: dir.url)
        }
        #expect(failovers.withLock { $0 } == 0)
        #expect(server.statistics.requests == 0)
    }

    /// A site whose blobs redirect to another server (a CDN holding the same files): both
    /// transports follow it and install the release's bytes, which that server sent.
    @Test(arguments: transports)
    func aRedirectToAnotherServerIsFollowed(_ transport: MapLoader.Configuration.Transport) async throws {
        let site = try TestSite()
        let cdn = ManifestServer(root: site.site)
        let cdnPort = try cdn.start()
        defer { cdn.stop() }
        let front = ManifestServer(
            root: site.site, faults: FaultPlan(redirect: RedirectFault(to: "http://127.0.0.1:\(cdnPort)", paths: ["/blobs/"])))
        let port = try front.start()
        defer { front.stop() }
        try await Self.installLandsTheRelease(site, server: "http://127.0.0.1:\(port)", transport: transport)
        #expect(front.statistics.statusCounts[302, default: 0] > 0, "\(front.statistics.statusCounts)")
        // A whole file (libcurl) or its windows (URLSession).
        let bodies = cdn.statistics.statusCounts[200, default: 0] + cdn.statistics.statusCounts[206, default: 0]
        #expect(cdn.statistics.bodyBytesSent > 0 && bodies > 0, "\(cdn.statistics.statusCounts)")
    }

    /// Redirects no client should follow: a loop (every request sent to itself) and another
    /// scheme (`file://`, which would read the device's own files). Each fails the update in
    /// one line that says so, with both transports, and the installed maps stay as they were.
    @Test(arguments: transports)
    func aRedirectLoopOrToAFileFailsAndLeavesTheMapsAsTheyWere(_ transport: MapLoader.Configuration.Transport) async throws {
        let site = try TestSite()
        let dir = TemporaryDirectory()
        let data = dir.path("data")
        let good = MapLoader(
            configuration: .init(server: site.url, dataDirectory: data, trust: TrustPolicy(keys: [site.publicKey]), transport: transport))
        _ = try await good.install(["de-berlin"])
        let installed = try snapshot(good.currentFolder)
        try site.publish(2)
        // FoundationNetworking resolves a `file:` Location against the request's URL (so it
        // loops); libcurl refuses the scheme.
        let cases: [(String, String?, [String])] = [("a loop", nil, ["redirect"]), ("file://", "file://", ["file", "redirect"])]
        for (name, prefix, words) in cases {
            let server = ManifestServer(root: site.site, faults: FaultPlan(redirect: RedirectFault(to: prefix, paths: ["/blobs/"])))
            let port = try server.start()
            defer { server.stop() }
            let loader = MapLoader(
                configuration: .init(
                    server: "http://127.0.0.1:\(port)", dataDirectory: data, retry: .init(attempts: 2, initialDelay: 0.01, maxDelay: 0.05),
                    trust: TrustPolicy(keys: [site.publicKey]), transport: transport))
            do {
                _ = try await loader.performUpdate(strategy: .full)
                Issue.record("\(name): an update through a refused redirect succeeded")
            } catch {
                let line = error.description
                #expect(words.contains { line.lowercased().contains($0) } && !line.contains("\n"), "\(name): \(line)")
            }
            #expect(try snapshot(loader.currentFolder) == installed, "\(name)")
            #expect(server.statistics.statusCounts[302, default: 0] > 0, "\(name): \(server.statistics.statusCounts)")
        }
    }

    /// A file's retries are counted across its requests: a 20 MB file whose first two
    /// bodies longer than 4 MiB are cut there fails with 2 attempts allowed and completes
    /// with 3, with either transport (libcurl asks for the file and then its rest; URLSession
    /// asks in 8 MiB windows, two of them cut, which once had 2 attempts each).
    @Test(arguments: transports)
    func aFilesRetriesAreCountedAcrossItsWindows(_ transport: MapLoader.Configuration.Transport) async throws {
        let dir = TemporaryDirectory()
        let (folder, path, sha256) = try Self.bigFile(20_000_000, in: dir)
        for attempts in [2, 3] {
            let server = ManifestServer(root: folder, faults: FaultPlan(dropAfterBytes: 4 << 20, dropCount: 2))
            let port = try server.start()
            defer { server.stop() }
            let source = try Self.source(URL(string: "http://127.0.0.1:\(port)")!, transport, attempts: attempts)
            let file = dir.path("download-\(attempts)")
            if attempts == 2 {
                await #expect {
                    try await source.download(path, to: file, limit: .exactly(20_000_000)) { _ in }
                } throws: { error in
                    "\(error)".contains("after 2 attempts")
                }
            } else {
                try await source.download(path, to: file, limit: .exactly(20_000_000)) { _ in }
                #expect(try FileHashing.sha256(of: Data(contentsOf: file)) == sha256)
            }
            #expect(server.statistics.droppedResponses == 2, "\(attempts) attempts: \(server.statistics.statusCounts)")
        }
    }
}
