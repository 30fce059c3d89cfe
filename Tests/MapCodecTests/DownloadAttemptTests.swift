import Foundation
import MapTestSupport
import MapTransfer
import Testing

@testable import MapLoader

/// The decisions of one download attempt, as tables: no server, no file, no clock (the
/// instants are chosen), so each network fault is one row.
@Suite struct DownloadAttemptTests {
    static let t0 = ContinuousClock.now
    static let url = "http://maps.example:8080/blobs/sha256/ab/ab12"

    static func attempt(
        _ limit: TransferLimit = .exactly(16_395), offset: Int64 = 0, window: Int64? = nil,
        deadlines: TransferDeadlines = TransferDeadlines(.init()), giveUp: ContinuousClock.Instant? = nil
    ) -> DownloadAttempt {
        DownloadAttempt(
            url: url, host: "maps.example:8080", limit: limit, window: window, offset: offset, validator: "\"v1\"",
            deadlines: deadlines, giveUp: giveUp, now: t0)
    }

    static func detail(_ action: DownloadAttempt.HeadAction) -> String? {
        guard case .stop(.failed(.integrityFailed(_, let detail))) = action else { return nil }
        return detail
    }

    /// One response head and what the attempt must do with it.
    struct HeadRow: Sendable, CustomTestStringConvertible {
        let name: String
        let limit: TransferLimit
        let offset: Int64
        let window: Int64?
        let status: Int
        let length: Int64?
        let range: String?
        let expect: @Sendable (DownloadAttempt.HeadAction) -> Bool
        var testDescription: String { name }
    }

    static let heads: [HeadRow] = [
        HeadRow(
            name: "a whole file as pinned", limit: .exactly(16_395), offset: 0, window: nil, status: 200, length: 16_395,
            range: nil
        ) { $0 == .append },
        HeadRow(
            name: "a body of unknown length is taken (and bounded as it comes)", limit: .exactly(16_395), offset: 0,
            window: nil, status: 200, length: nil, range: nil
        ) { $0 == .append },
        HeadRow(
            name: "a server that ignores Range sends the whole file: start over", limit: .exactly(16_395), offset: 8_197,
            window: nil, status: 200, length: 16_395, range: nil
        ) { $0 == .restart },
        HeadRow(
            name: "a resume as asked", limit: .exactly(16_395), offset: 8_197, window: nil, status: 206, length: 8_198,
            range: "bytes 8197-16394/16395"
        ) { $0 == .append },
        HeadRow(
            name: "a resume at the wrong byte names the byte, not the length", limit: .exactly(16_395), offset: 8_197,
            window: nil, status: 206, length: 16_395, range: "bytes 0-16394/16395"
        ) {
            detail($0) == "the server resumed at byte 0 where bytes 8197– were asked for (Content-Range 'bytes 0-16394/16395')"
        },
        HeadRow(
            name: "a resume of another file (its total differs from the pin)", limit: .exactly(16_395), offset: 100,
            window: nil, status: 206, length: 900, range: "bytes 100-999/1000"
        ) {
            detail($0)?.contains("says the file has 1000 bytes") == true
        },
        HeadRow(
            name: "a resume that ends early", limit: .exactly(16_395), offset: 100, window: nil, status: 206, length: 900,
            range: "bytes 100-999/*"
        ) { detail($0)?.contains("sends bytes 100–999 where bytes 100–16394 were asked for") == true },
        HeadRow(
            name: "a Content-Length that contradicts the Content-Range", limit: .exactly(16_395), offset: 100,
            window: nil, status: 206, length: 5, range: "bytes 100-16394/16395"
        ) {
            detail($0)?.contains("announces 5 bytes for Content-Range") == true
        },
        HeadRow(
            name: "a 206 without a Content-Range", limit: .exactly(16_395), offset: 100, window: nil, status: 206,
            length: 16_295, range: nil
        ) { detail($0)?.contains("no Content-Range") == true },
        HeadRow(
            name: "a whole file longer than pinned, announced", limit: .exactly(16_395), offset: 0, window: nil,
            status: 200, length: 5_016_395, range: nil
        ) {
            detail($0) == "the server announces 5016395 bytes where the manifest pins 16395"
        },
        HeadRow(
            name: "a catalog announced over its cap", limit: .atMost(4 << 20), offset: 0, window: nil, status: 200,
            length: 1 << 40, range: nil
        ) { detail($0)?.contains("more than the 4194304 allowed") == true },
        HeadRow(
            name: "a window as asked", limit: .exactly(16_395), offset: 4_096, window: 8_191, status: 206, length: 4_096,
            range: "bytes 4096-8191/16395"
        ) { $0 == .append },
        HeadRow(
            name: "a window answered with the whole file", limit: .exactly(16_395), offset: 4_096, window: 8_191,
            status: 200, length: 16_395, range: nil
        ) { $0 == .restart },
        HeadRow(
            name: "416 for a file already whole", limit: .exactly(16_395), offset: 16_395, window: nil, status: 416,
            length: nil, range: "bytes */16395"
        ) { $0 == .stop(.finished) },
        HeadRow(
            name: "416 for a partial file", limit: .exactly(16_395), offset: 100, window: nil, status: 416, length: nil,
            range: "bytes */16395"
        ) { $0 == .stop(.failed(.httpStatus(url: url, status: 416))) },
        HeadRow(
            name: "416 for an unpinned file kept whole (a catalog paused at its end)", limit: .atMost(1 << 20), offset: 4_000,
            window: nil, status: 416, length: nil, range: "bytes */4000"
        ) { $0 == .stop(.finished) },
        HeadRow(
            name: "416 for an unpinned file that is shorter on the server", limit: .atMost(1 << 20), offset: 4_000,
            window: nil, status: 416, length: nil, range: "bytes */3000"
        ) { $0 == .stop(.failed(.httpStatus(url: url, status: 416))) },
        HeadRow(
            name: "503 is worth a retry", limit: .exactly(16_395), offset: 0, window: nil, status: 503, length: 10,
            range: nil
        ) { $0 == .stop(.retryable(reason: "HTTP 503", validator: nil, worked: true)) },
        HeadRow(
            name: "a catalog's resume that claims every byte an Int64 can count (no trap)", limit: .atMost(4 << 20), offset: 0,
            window: nil, status: 206, length: 1, range: "bytes 0-9223372036854775807/*"
        ) { detail($0)?.contains("more than the 4194304 allowed") == true },
        HeadRow(
            name: "a catalog's resume past its cap", limit: .atMost(4 << 20), offset: 100, window: nil, status: 206,
            length: nil, range: "bytes 100-4194304/*"
        ) { detail($0)?.contains("bytes 100–4194304, more than the 4194304 allowed") == true },
        HeadRow(
            name: "a catalog's resume within its cap", limit: .atMost(4 << 20), offset: 100, window: nil, status: 206,
            length: 4_194_204, range: "bytes 100-4194303/*"
        ) { $0 == .append },
        HeadRow(name: "404 is final", limit: .exactly(16_395), offset: 0, window: nil, status: 404, length: 10, range: nil) {
            $0 == .stop(.failed(.httpStatus(url: url, status: 404)))
        },
    ]

    @Test(arguments: heads)
    func responseHeads(_ row: HeadRow) {
        var attempt = Self.attempt(row.limit, offset: row.offset, window: row.window)
        let action = attempt.head(status: row.status, contentLength: row.length, contentRange: row.range, etag: nil, now: Self.t0)
        #expect(row.expect(action), "\(action)")
        #expect(attempt.responded)
    }

    @Test func theRangeAskedForFollowsThePartialFileAndTheWindow() {
        #expect(Self.attempt(offset: 0).rangeHeader == nil)
        #expect(Self.attempt(offset: 8_197).rangeHeader == "bytes=8197-")
        #expect(Self.attempt(offset: 4_096, window: 8_191).rangeHeader == "bytes=4096-8191")
        #expect(Self.attempt(offset: 16_395).before == .finished)
        #expect(Self.attempt(offset: 16_396).before == .retryable(reason: "the partial file was longer than pinned", validator: nil, worked: true))
        #expect(Self.attempt(offset: 10).before == nil)
    }

    @Test func bodiesStopAtTheFirstBytePastThePin() {
        var attempt = Self.attempt()
        _ = attempt.head(status: 200, contentLength: nil, contentRange: nil, etag: nil, now: Self.t0)
        #expect(attempt.body(16_000, now: Self.t0) == nil)
        #expect(attempt.body(395, now: Self.t0) == nil)
        #expect(attempt.body(1, now: Self.t0) == .failed(.integrityFailed(what: Self.url, detail: "longer than the 16395 bytes pinned for it")))
        #expect(attempt.offset == 16_395, "the refused byte is not counted")
        #expect(
            attempt.end(nil) == .failed(.integrityFailed(what: Self.url, detail: "longer than the 16395 bytes pinned for it")),
            "the first outcome stays")
        var endless = Self.attempt(.atMost(1_000))
        _ = endless.head(status: 200, contentLength: nil, contentRange: nil, etag: nil, now: Self.t0)
        #expect(endless.body(Int.max, now: Self.t0) != nil, "no overflow on a huge piece")
    }

    @Test func endsOfTransfers() {
        var short = Self.attempt()
        _ = short.head(status: 200, contentLength: 16_395, contentRange: nil, etag: "\"e\"", now: Self.t0)
        _ = short.body(100, now: Self.t0)
        #expect(short.end(nil) == .retryable(reason: "connection closed after 100 of 16395 bytes", validator: "\"e\"", worked: true))
        var whole = Self.attempt()
        _ = whole.head(status: 200, contentLength: 16_395, contentRange: nil, etag: nil, now: Self.t0)
        _ = whole.body(16_395, now: Self.t0)
        #expect(whole.end(nil) == .finished)
        var window = Self.attempt(offset: 0, window: 4_095)
        _ = window.head(status: 206, contentLength: 4_096, contentRange: "bytes 0-4095/16395", etag: nil, now: Self.t0)
        _ = window.body(4_096, now: Self.t0)
        #expect(window.end(nil) == .finished, "a window ends at its last byte")
        var refused = Self.attempt()
        #expect(
            refused.end(.refused)
                == .retryable(
                    reason: "maps.example:8080 refused the connection (is the server running?)",
                    validator: "\"v1\"", worked: false),
            "retried only for a host that answered before")
        var tls = Self.attempt()
        guard case .failed(.connectionFailed(_, let tlsReason)) = tls.end(.tls("wrong version number")) else {
            Issue.record("not failed")
            return
        }
        #expect(tlsReason.contains("use http://"))
        var silent = Self.attempt()
        #expect(
            silent.end(.broken("Empty reply from server"))
                == .retryable(
                    reason: "the request to maps.example:8080 failed without an answer (Empty reply from server)",
                    validator: "\"v1\"", worked: false))
    }

    /// A client stopped for 50 s in the middle of a steady 2 kB/s download (SIGSTOP, a
    /// laptop asleep; the instants are chosen, a fake clock) is not a slow or silent server
    /// when it runs again: the gap in the driver's calls does not count. Without the rule
    /// the same calls fail the download as too slow. Silence after the gap still counts.
    @Test(arguments: [TransferDeadlines.clientSuspension, nil])
    func aClientThatDidNotRunIsNotASlowServer(_ suspension: Double?) {
        let t0 = Self.t0
        let deadlines = TransferDeadlines(stall: 30, minimumRate: 1_000, rateWindow: 60, total: nil, suspension: suspension)
        var attempt = Self.attempt(.atMost(1 << 30), deadlines: deadlines)
        _ = attempt.head(status: 200, contentLength: nil, contentRange: nil, etag: nil, now: t0)
        for second in 1...20 {
            #expect(attempt.body(2_000, now: t0 + .seconds(second)) == nil)
            #expect(attempt.tick(now: t0 + .seconds(second)) == nil)
        }
        // Stopped from second 20 to second 70; then 2 kB/s again.
        var after: DownloadOutcome?
        for second in 70...100 where after == nil {
            after = attempt.body(2_000, now: t0 + .seconds(second)) ?? attempt.tick(now: t0 + .seconds(second))
        }
        guard suspension != nil else {
            guard case .failed(.connectionFailed(_, let reason))? = after else {
                Issue.record("not too slow: \(String(describing: after))")
                return
            }
            #expect(reason.contains("is too slow"))
            return
        }
        #expect(after == nil, "the suspension counted against the server: \(String(describing: after))")
        // Silence while the client runs (a call each second) is still the server's.
        var silent: DownloadOutcome?
        for second in 101...140 where silent == nil { silent = attempt.tick(now: t0 + .seconds(second)) }
        guard case .retryable(let reason, _, true)? = silent else {
            Issue.record("no stall: \(String(describing: silent))")
            return
        }
        #expect(reason.hasPrefix("maps.example:8080 stopped sending for 30 s"))
    }

    @Test func deadlinesAtChosenInstants() {
        let t0 = Self.t0
        let deadlines = TransferDeadlines(stall: 30, minimumRate: 1_000, rateWindow: 60, total: 600)
        var mute = Self.attempt(deadlines: deadlines)
        #expect(mute.tick(now: t0 + .seconds(29)) == nil)
        #expect(
            mute.tick(now: t0 + .seconds(31))
                == .retryable(
                    reason: "maps.example:8080 accepted the connection but sent no answer in 30 s",
                    validator: "\"v1\"", worked: false))
        var stalled = Self.attempt(deadlines: deadlines)
        _ = stalled.head(status: 200, contentLength: nil, contentRange: nil, etag: nil, now: t0)
        _ = stalled.body(7_000, now: t0 + .seconds(10))
        #expect(stalled.tick(now: t0 + .seconds(39)) == nil)
        guard case .retryable(let reason, _, true)? = stalled.tick(now: t0 + .seconds(41)) else {
            Issue.record("no stall")
            return
        }
        #expect(reason.hasPrefix("maps.example:8080 stopped sending for 30 s"))
        var slow = Self.attempt(deadlines: deadlines)
        _ = slow.head(status: 200, contentLength: nil, contentRange: nil, etag: nil, now: t0)
        for second in stride(from: 5, through: 60, by: 5) { _ = slow.body(100, now: t0 + .seconds(second)) }
        guard case .failed(.connectionFailed(_, let slowReason))? = slow.tick(now: t0 + .seconds(60)) else {
            Issue.record("not slow")
            return
        }
        #expect(slowReason.contains("is too slow"))
        var late = Self.attempt(deadlines: deadlines, giveUp: t0 + .seconds(600))
        _ = late.head(status: 200, contentLength: nil, contentRange: nil, etag: nil, now: t0)
        _ = late.body(1, now: t0 + .seconds(600))
        guard case .failed(.connectionFailed(_, let lateReason))? = late.tick(now: t0 + .seconds(601)) else {
            Issue.record("not late")
            return
        }
        #expect(lateReason.contains("took longer than the 600 s allowed for one file"))
    }

    @Test(
        arguments: [
            ("bytes 0-99/100", ContentRange(first: 0, last: 99, total: 100)),
            ("bytes 5-9/*", ContentRange(first: 5, last: 9, total: nil)),
            ("bytes 9-5/100", nil), ("bytes 0-99/50", nil), ("bytes */100", nil), ("items 0-1/2", nil),
            ("bytes -1-5/10", nil), ("bytes 0-99999999999999999999/1", nil), ("", nil),
        ] as [(String, ContentRange?)])
    func contentRangeHeaders(_ header: String, _ expected: ContentRange?) {
        #expect(ContentRange(header) == expected)
    }

    @Test func deadlinesAnAppMayWriteAreBroughtIntoRange() {
        let wild = TransferDeadlines(stall: .infinity, minimumRate: -5, rateWindow: .nan, total: .infinity, suspension: -1)
        #expect(wild.stall == TransferDeadlines.longest)
        #expect(wild.minimumRate == 0)
        #expect(wild.rateWindow == 60)
        #expect(wild.total == nil)
        #expect(wild.suspension == 0.01)
        #expect(TransferDeadlines(stall: 7, minimumRate: 1, rateWindow: 9, total: 1e300).total == TransferDeadlines.longest)
        // An attempt under such deadlines decides without trapping, however long nothing came.
        var attempt = Self.attempt(deadlines: TransferDeadlines(stall: .infinity, minimumRate: 0, rateWindow: .infinity, total: nil))
        #expect(attempt.tick(now: Self.t0 + .seconds(40 * 24 * 3600)) != nil)
    }

    @Test func aRangeCountsItsBytesWithoutTrapping() {
        #expect(ContentRange(first: 0, last: 99, total: nil).count == 100)
        #expect(ContentRange(first: 0, last: .max, total: nil).count == .max)
        #expect(ContentRange(first: 1, last: .max, total: nil).count == .max)
    }
}
