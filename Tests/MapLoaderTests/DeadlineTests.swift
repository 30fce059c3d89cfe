import Foundation
import ManifestServer
import MapTestSupport
import Synchronization
import Testing

@testable import MapLoader

/// Servers that refuse, never answer or dribble end in one clear network error naming the
/// host and what stalled; only servers that answered are retried.
@Suite struct DeadlineTests {
    /// A loader with fast deadlines and plenty of retries, and the events it reports.
    static func loader(server: String, data: URL, deadlines: MapLoader.Configuration.Deadlines) -> (MapLoader, EventLog, Task<Void, Never>) {
        let loader = MapLoader(
            configuration: .init(
                server: server, dataDirectory: data,
                retry: .init(attempts: 6, initialDelay: 0.01, maxDelay: 0.02),
                deadlines: deadlines, trust: TrustPolicy(allowUnsigned: true)))
        let log = EventLog()
        let events = loader.events()
        let collector = Task { for await event in events { await log.append(event) } }
        return (loader, log, collector)
    }

    static func lostConnections(_ log: EventLog) async -> Int {
        await log.events.filter { if case .connectionLost = $0 { true } else { false } }.count
    }

    @Test func refusedConnectionFailsAtOnceWithoutRetries() async throws {
        let dir = TemporaryDirectory()
        let port = closedPort()
        let (loader, log, collector) = Self.loader(server: "http://127.0.0.1:\(port)", data: dir.path("data"), deadlines: .init())
        await #expect {
            try await loader.install(["de-berlin"])
        } throws: { error in
            guard case MapLoaderError.connectionFailed(_, let reason) = error else { return false }
            return reason.contains("127.0.0.1:\(port) refused the connection")
        }
        loader.closeEventStreams()
        await collector.value
        #expect(await Self.lostConnections(log) == 0)
    }

    @Test func serverThatNeverAnswersFailsAfterTheStallDeadline() async throws {
        // A listening socket that never accepts: the kernel completes the handshake, and
        // nothing ever answers.
        let listener = try SilentListener()
        defer { listener.close() }
        let dir = TemporaryDirectory()
        let (loader, log, collector) = Self.loader(
            server: "http://127.0.0.1:\(listener.port)", data: dir.path("data"),
            deadlines: .init(stall: 0.5))
        await #expect {
            try await loader.install(["de-berlin"])
        } throws: { error in
            guard case MapLoaderError.connectionFailed(_, let reason) = error else { return false }
            return reason.contains("127.0.0.1:\(listener.port) accepted the connection but sent no answer")
        }
        loader.closeEventStreams()
        await collector.value
        #expect(await Self.lostConnections(log) == 0)
    }

    /// Installs through the test site served at `bytesPerSecond` with `deadlines`; the install
    /// must fail with a network error whose reason contains `expected` (given the port), and
    /// leave nothing installed.
    func expectSlowServerFails(
        bytesPerSecond: Int, deadlines: MapLoader.Configuration.Deadlines,
        _ expected: (Int) -> String
    ) async throws {
        let site = try TestSite()
        let slow = ManifestServer(root: site.site, faults: FaultPlan(bytesPerSecond: bytesPerSecond))
        let port = try slow.start()
        defer { slow.stop() }
        let dir = TemporaryDirectory()
        let (loader, _, collector) = Self.loader(server: "http://127.0.0.1:\(port)", data: dir.path("data"), deadlines: deadlines)
        await #expect {
            try await loader.install(["de-berlin"])
        } throws: { error in
            guard case MapLoaderError.connectionFailed(_, let reason) = error else { return false }
            return reason.contains(expected(port))
        }
        loader.closeEventStreams()
        await collector.value
        #expect(!FileManager.default.fileExists(atPath: dir.path("data/current").path))
    }

    @Test func dribblingServerFailsBelowTheMinimumRate() async throws {
        // 200 bytes a second: the catalog arrives, slowly, far below 5 kB/s.
        try await expectSlowServerFails(
            bytesPerSecond: 200,
            deadlines: .init(stall: 30, minimumRate: 5_000, rateWindow: 0.5)
        ) {
            "127.0.0.1:\($0) is too slow"
        }
    }

    @Test func oneFileMayNotTakeLongerThanTheTotalDeadline() async throws {
        // A steady 2 kB/s passes the rate check (minimum 0) but not the 1 s allowed per file.
        try await expectSlowServerFails(bytesPerSecond: 2_000, deadlines: .init(stall: 30, minimumRate: 0, total: 1)) { _ in
            "took longer than the 1 s allowed for one file"
        }
    }

    /// A server that answered and then restarts (refusing connections for a moment) is
    /// retried with backoff: the download resumes and the install lands.
    @Test func aServerRestartedMidDownloadIsRetried() async throws {
        let site = try TestSite()
        let slow = ManifestServer(root: site.site, faults: FaultPlan(bytesPerSecond: 40_000))
        let port = try slow.start()
        let dir = TemporaryDirectory()
        let loader = MapLoader(
            configuration: .init(
                server: "http://127.0.0.1:\(port)", dataDirectory: dir.path("data"),
                retry: .init(attempts: 8, initialDelay: 0.3, maxDelay: 1),
                trust: TrustPolicy(keys: [site.publicKey])))
        let log = EventLog()
        let events = loader.events()
        let stopped = Mutex(false)
        let collector = Task {
            for await event in events {
                await log.append(event)
                // Once bytes of a blob arrived, the server goes away (a restart).
                if case .progress(let progress) = event, progress.phase == .download, progress.completedBytes > 0,
                    stopped.withLock({
                        let first = !$0
                        $0 = true
                        return first
                    })
                {
                    slow.stop()
                }
            }
        }
        let install = Task { try await loader.install(["de-berlin"]) }
        while !stopped.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .milliseconds(500))
        let restarted = ManifestServer(root: site.site, port: port)
        try restarted.start()
        defer { restarted.stop() }
        _ = try await install.value
        loader.closeEventStreams()
        await collector.value
        #expect(await Self.lostConnections(log) > 0, "the loss was reported")
        #expect(try snapshot(loader.currentFolder.appendingPathComponent("de-berlin/base")) == snapshot(site.release(1, "de-berlin", "base")))
    }

    /// `https://` for a plain-HTTP server names the fault and the fix.
    @Test func httpsAgainstAPlainHTTPServerSaysToUseHTTP() async throws {
        let site = try TestSite()
        let port = site.url.split(separator: ":").last!
        let dir = TemporaryDirectory()
        let loader = MapLoader(
            configuration: .init(
                server: "https://127.0.0.1:\(port)", dataDirectory: dir.path("data"),
                trust: TrustPolicy(keys: [site.publicKey])))
        await #expect {
            _ = try await loader.checkForUpdate()
        } throws: { error in
            guard case MapLoaderError.connectionFailed(_, let reason) = error else { return false }
            return reason.contains("TLS handshake") && reason.contains("use http://")
        }
    }

    @Test func siteAddressesThatAreNeitherURLsNorPathsAreUsageErrors() async throws {
        let dir = TemporaryDirectory()
        for server in ["127.0.0.1:8080", "ftp://example.org/site", "maps.example.com", "http://"] {
            let loader = MapLoader(configuration: .init(server: server, dataDirectory: dir.path("data")))
            await #expect {
                _ = try await loader.packageTree()
            } throws: { error in
                guard case MapLoaderError.invalidParameters(let detail) = error else { return false }
                return detail.contains("http://host:port")
            }
        }
    }
}

/// A TCP socket on 127.0.0.1 that listens and never accepts.
struct SilentListener {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else { throw SystemError("listen", "127.0.0.1", .init(rawValue: errno)) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { _ = Glibc.close(fd) }
}
