import Foundation
import MapTestSupport
import Testing

@testable import MapLoader

/// A bandwidth cap for background use (`--limit-rate`, `Configuration.maximumRate`).
@Suite struct RateLimitTests {
    @Test func aCappedDownloadComesInWindowsOfAQuarterSecond() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let plan = try await site.loader().planInstall(["de-berlin"])
        let capped = MapLoader(
            configuration: .init(
                server: site.url, dataDirectory: data,
                trust: TrustPolicy(keys: [site.publicKey]), maximumRate: 40_000))
        site.server.resetStatistics()
        try await capped.install(["de-berlin"])
        #expect(try await capped.verify().ok)
        let statistics = site.server.statistics
        // Every blob came as 206 windows of at most 16 kB (a quarter second of 40 kB/s, at
        // least 16 kB): more requests than blobs, and never a whole large blob at once.
        let blobs = plan.steps.filter { $0.action == .install }
        let windows = blobs.reduce(0) { $0 + Int(($1.downloadBytes + 16_383) / 16_384) }
        // (the pinned manifest comes the same way, hence "at least").
        #expect(statistics.statusCounts[206, default: 0] >= windows, "\(statistics.bodyBytesSentByPath)")
        #expect(statistics.statusCounts[200, default: 0] <= 2)  // catalog.json and its signature only
        #expect(windows > blobs.count)
        #expect(statistics.bodyBytesSent >= plan.downloadBytes)
    }

    @Test func theBucketPacesBytesToTheRate() {
        // The bucket's own arithmetic, on instants the test chooses (no clock read).
        let start = ContinuousClock.now
        let limiter = RateLimiter(bytesPerSecond: 1_000, start: start)
        // A window is paid for before it is requested: no burst at the start.
        #expect(limiter.take(1_000, now: start) == .milliseconds(1_000))
        #expect(limiter.take(500, now: start) == .milliseconds(1_500))  // queued behind the first
        #expect(limiter.take(250, now: start + .seconds(1)) == .milliseconds(750))  // 500 still owed, 250 more
        // After a long pause one window goes at once (no more credit builds up than that)...
        #expect(limiter.take(1_000, now: start + .seconds(100)) == .zero)
        #expect(limiter.take(1_000, now: start + .seconds(100)) == .milliseconds(1_000))
        // ...and time spent fetching a window counts: due at 101 s and fetched by 101.4 s,
        // the next 1,000 B wait 0.6 s, not a whole second (the download keeps the cap's pace).
        #expect(limiter.take(1_000, now: start + .milliseconds(101_400)) == .milliseconds(600))
    }

    @Test func limitRateThroughTheCLI() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        #expect(try await CLI.run(["install", "de-berlin", "--limit-rate", "lots"], site: site, data: data).status == 64)
        site.server.resetStatistics()
        #expect(try await CLI.run(["install", "de-berlin", "--limit-rate", "40k"], site: site, data: data).status == 0)
        #expect(site.server.statistics.statusCounts[206, default: 0] > 2)
    }
}
