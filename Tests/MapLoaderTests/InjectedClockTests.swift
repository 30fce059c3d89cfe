import Foundation
import MapTestSupport
import Synchronization
import Testing

/// Retries and deadlines on a clock the test passes in (`HTTPSource(clock:)`): a server
/// that answers 503 to everything is retried with exponential backoff, and the time one
/// file may take is counted, without the test waiting for any of it.
@Suite struct InjectedClockTests {
    /// A clock that stands still until slept on: each sleep moves it on by the time asked
    /// and is recorded (a fake of time passing; the server and the transfers are real).
    final class FakeSteppedClock: TransferClock {
        private let state: Mutex<(now: ContinuousClock.Instant, sleeps: [Duration])>

        init() { state = Mutex((.now, [])) }

        var now: ContinuousClock.Instant { state.withLock { $0.now } }
        /// Every sleep asked for, in order.
        var sleeps: [Duration] { state.withLock { $0.sleeps } }

        func sleep(for duration: Duration) async throws {
            try Task.checkCancellation()
            state.withLock {
                $0.now += duration
                $0.sleeps.append(duration)
            }
        }
    }

    /// A server whose every answer is 503, and a blob's path and size on it.
    static func failingServer() throws -> (TestSite, ManifestServer, URL, String, Int64) {
        let site = try TestSite()
        let failing = ManifestServer(root: site.site, faults: FaultPlan(errorRate: 1, errorStatus: 503))
        let url = URL(string: "http://127.0.0.1:\(try failing.start())")!
        let blob = try site.blob("de-berlin", "base")
        let size = Int64(try Data(contentsOf: blob).count)
        return (site, failing, url, String(blob.path.dropFirst(site.site.path.count + 1)), size)
    }

    @Test func retriesBackOffExponentiallyOnTheInjectedClock() async throws {
        let (site, server, url, path, size) = try Self.failingServer()
        defer { server.stop() }
        let clock = FakeSteppedClock()
        let source = HTTPSource(
            baseURL: url, retry: RetryPolicy(attempts: 6, initialDelay: 0.2, maxDelay: 5),
            deadlines: TransferDeadlines(stall: 30, minimumRate: 0, rateWindow: 60, total: nil), clock: clock)
        await #expect(throws: MapLoaderError.self) {
            try await source.download(path, to: site.dir.path("blob"), limit: .exactly(size)) { _ in }
        }
        // Five waits between six attempts, each 0.2 s × 2^n (capped at 5 s) with ±50% jitter,
        // all on the test's clock (the test waits for none of them).
        let sleeps = clock.sleeps.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        #expect(sleeps.count == 5, "\(sleeps)")
        for (n, slept) in sleeps.enumerated() {
            let base = min(5, 0.2 * pow(2, Double(n)))
            #expect(slept >= base * 0.5 - 1e-9 && slept <= base * 1.5 + 1e-9, "wait \(n + 1): \(slept) s, base \(base) s")
        }
    }

    @Test func theTimeForOneFileIsCountedOnTheInjectedClock() async throws {
        let (site, server, url, path, size) = try Self.failingServer()
        defer { server.stop() }
        let clock = FakeSteppedClock()
        let source = HTTPSource(
            baseURL: url, retry: RetryPolicy(attempts: 100, initialDelay: 1, maxDelay: 1),
            deadlines: TransferDeadlines(stall: 30, minimumRate: 0, rateWindow: 60, total: 10), clock: clock)
        do {
            try await source.download(path, to: site.dir.path("blob"), limit: .exactly(size)) { _ in }
            Issue.record("a server answering 503 to everything was taken")
        } catch {
            guard case .connectionFailed(_, let reason) = error else { throw error }
            #expect(reason.contains("gave up after the 10 s allowed for one file"), "\(reason)")
        }
        // Retries stop before the next wait would pass the 10 s: far fewer than 100 attempts.
        let waited = clock.sleeps.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        #expect(waited.reduce(0, +) <= 10 && waited.count < 20, "\(waited)")
    }
}
