package import MapModel

/// How one download attempt ended.
package enum DownloadOutcome: Sendable, Equatable {
    case finished
    case failed(MapLoaderError)
    /// Stopped by a pause (``TransferControl``); the partial file is kept for `Range`.
    case paused(validator: String?)
    /// Worth another attempt; `validator` is the entity tag to resume against;
    /// `worked` tells whether the server answered this attempt at all (only a server
    /// that answered is worth retrying).
    case retryable(reason: String, validator: String?, worked: Bool)
}

/// A transport failure, as the HTTP driver names it.
package enum TransportFailure: Sendable, Equatable {
    /// Nothing listens at the address.
    case refused
    /// The host name does not resolve.
    case unresolved
    /// The TLS handshake failed (`detail` says how): often `https://` against a plain-HTTP server.
    case tls(String)
    /// The connection broke or timed out; `detail` is the transport's words.
    case broken(String)
    /// The system refused the network the request would use (the network policy); `detail` names it.
    case notAllowed(String)
}

/// The decisions of one HTTP download attempt, as a value: what to do with a response
/// head, each piece of body, a tick of the clock and the end of the transfer. The driver
/// (``HTTPDownload``) feeds it what the network did; nothing here touches a socket, a file
/// or a clock, so every case (416, wrong ranges, short or endless bodies, stalls) is a
/// table test.
package struct DownloadAttempt: Sendable {
    /// What the driver does with a response head.
    package enum HeadAction: Sendable, Equatable {
        /// Take the body, appending to the partial file.
        case append
        /// Empty the partial file, then take the body (the server sends the whole file).
        case restart
        /// Take nothing more.
        case stop(DownloadOutcome)
    }

    package let url: String
    package let host: String
    package let limit: TransferLimit
    /// The last byte offset asked for (a bandwidth cap fetches in windows), or `nil`.
    package let window: Int64?
    package let deadlines: TransferDeadlines
    /// When the whole file's time runs out, if it is limited.
    package let giveUp: ContinuousClock.Instant?

    /// Bytes the partial file holds.
    package private(set) var offset: Int64
    /// The entity tag of the response, to resume against.
    package private(set) var validator: String?
    /// Whether the server sent a response head.
    package private(set) var responded = false
    /// The first outcome decided; later events change nothing.
    package private(set) var outcome: DownloadOutcome?
    private var started: ContinuousClock.Instant
    private var lastActivity: ContinuousClock.Instant
    private var windowStart: ContinuousClock.Instant
    private var windowBytes: Int64 = 0
    /// The driver's last call (see ``TransferDeadlines/suspension``).
    private var lastCall: ContinuousClock.Instant
    /// The server ignored a windowed `Range` and sends the whole file.
    private var windowIgnored = false
    /// Bytes counted as they arrived (``holding(_:now:)``) and not yet taken by ``body(_:now:)``.
    private var held: Int64 = 0

    package init(
        url: String, host: String, limit: TransferLimit, window: Int64?, offset: Int64,
        validator: String?, deadlines: TransferDeadlines, giveUp: ContinuousClock.Instant?,
        now: ContinuousClock.Instant
    ) {
        self.url = url
        self.host = host
        self.limit = limit
        self.window = window
        self.offset = offset
        self.validator = validator
        self.deadlines = deadlines
        self.giveUp = giveUp
        started = now
        lastActivity = now
        windowStart = now
        lastCall = now
    }

    /// Moves the silence, rate and answer clocks past a gap in the driver's calls longer
    /// than ``TransferDeadlines/suspension``: the client did not run then, and a download
    /// resumed after a laptop's sleep or a `SIGSTOP` is not a slow server.
    private mutating func skipSuspension(now: ContinuousClock.Instant) {
        defer { lastCall = max(lastCall, now) }
        guard let suspension = deadlines.suspension, now - lastCall > .seconds(suspension) else { return }
        let gap = now - lastCall
        started += gap
        lastActivity += gap
        windowStart += gap
    }

    /// What to ask for before any byte moves: `nil` when the partial file already holds
    /// the whole pinned file; a failure when it holds more than allowed.
    package var before: DownloadOutcome? {
        if case .exactly(let size) = limit, offset == size { return .finished }
        // A window whose bytes all came before its request ended (a pause or a drop after
        // the last byte): asking again would send an empty, invalid range.
        if let window, offset == window + 1 { return .finished }
        if offset > limit.maximum {
            return .retryable(reason: "the partial file was longer than pinned", validator: nil, worked: true)
        }
        return nil
    }

    /// The `Range` header value to send, if any.
    package var rangeHeader: String? {
        if let window { return "bytes=\(offset)-\(window)" }
        return offset > 0 ? "bytes=\(offset)-" : nil
    }

    /// The offset one past the last byte this attempt should bring.
    private var expectedEnd: Int64? {
        if let window, !windowIgnored { return window + 1 }
        if case .exactly(let size) = limit { return size }
        return nil
    }

    private var pinned: Int64? {
        if case .exactly(let size) = limit { return size }
        return nil
    }

    private func integrity(_ detail: String) -> DownloadOutcome {
        .failed(.integrityFailed(what: url, detail: detail))
    }

    /// Decides on the final response head (redirects and `100 Continue` are not passed in).
    /// `contentLength` is `nil` when the server announced none (a chunked or endless body).
    package mutating func head(
        status: Int, contentLength: Int64?, contentRange: String?, etag: String?,
        now: ContinuousClock.Instant
    ) -> HeadAction {
        guard outcome == nil else { return .stop(outcome!) }
        skipSuspension(now: now)
        validator = etag
        responded = true
        lastActivity = now
        let action = decide(status: status, contentLength: contentLength, contentRange: contentRange, etag: etag)
        if case .stop(let decided) = action { outcome = decided }
        if action == .restart { offset = 0 }
        return action
    }

    private mutating func decide(status: Int, contentLength: Int64?, contentRange: String?, etag: String?) -> HeadAction {
        switch status {
        case 200:
            windowIgnored = window != nil
            if let problem = lengthProblem(contentLength) { return .stop(problem) }
            return offset > 0 ? .restart : .append
        case 206:
            guard let range = ContentRange(contentRange) else {
                return .stop(
                    integrity(
                        "the server answered a resume with \(contentRange.map { "Content-Range '\($0)'" } ?? "no Content-Range"), which names no byte range"
                    ))
            }
            let asked = window.map { "bytes \(offset)–\($0)" } ?? "bytes \(offset)–"
            guard range.first == offset else {
                return .stop(integrity("the server resumed at byte \(range.first) where \(asked) were asked for (Content-Range '\(contentRange!)')"))
            }
            if let total = range.total, let pinned, total != pinned {
                return .stop(
                    integrity("the server says the file has \(total) bytes (Content-Range '\(contentRange!)') where the manifest pins \(pinned)"))
            }
            if let end = expectedEnd, range.last != end - 1 {
                return .stop(
                    integrity(
                        "the server sends bytes \(range.first)–\(range.last) where \(asked)\(window == nil ? "\(end - 1)" : "") were asked for (Content-Range '\(contentRange!)')"
                    ))
            }
            // The range may end no later than the file may (a catalog's cap; a pin is checked above).
            guard range.last < limit.maximum else {
                return .stop(
                    integrity(
                        "the server sends bytes \(range.first)–\(range.last), more than the \(limit.maximum) allowed (Content-Range '\(contentRange!)')"
                    ))
            }
            if let contentLength, contentLength != range.count {
                return .stop(
                    integrity("the server announces \(contentLength) bytes for Content-Range '\(contentRange!)', which holds \(range.count)"))
            }
            return .append
        case 416 where pinned == offset:
            return .stop(.finished)
        case 416 where pinned == nil && offset > 0 && ContentRange.unsatisfiedTotal(contentRange) == offset:
            // A file of no pinned length (a catalog) that was whole when its transfer was
            // paused or dropped: the server says it has exactly the bytes kept.
            return .stop(.finished)
        case 408, 429, 500...599:
            return .stop(.retryable(reason: "HTTP \(status)", validator: etag, worked: true))
        default:
            return .stop(.failed(.httpStatus(url: url, status: status)))
        }
    }

    /// A whole-file answer whose announced length cannot be right.
    private func lengthProblem(_ contentLength: Int64?) -> DownloadOutcome? {
        guard let contentLength else { return nil }
        if let pinned, window == nil || windowIgnored, contentLength != pinned {
            return integrity("the server announces \(contentLength) bytes where the manifest pins \(pinned)")
        }
        if contentLength > limit.maximum {
            return integrity("the server announces \(contentLength) bytes, more than the \(limit.maximum) allowed")
        }
        return nil
    }

    /// Takes `count` body bytes: `nil` to write them and go on, or the outcome that stops
    /// the transfer before they are written (more than allowed).
    package mutating func body(_ count: Int, now: ContinuousClock.Instant) -> DownloadOutcome? {
        if let outcome { return outcome }
        guard count <= limit.maximum - offset else {
            let detail =
                pinned != nil
                ? "longer than the \(limit.maximum) bytes pinned for it"
                : "longer than the \(limit.maximum) bytes allowed"
            outcome = integrity(detail)
            return outcome
        }
        skipSuspension(now: now)
        offset += Int64(count)
        lastActivity = now
        // Bytes counted as they arrived are not counted again.
        let counted = min(Int64(count), held)
        held -= counted
        windowBytes += Int64(count) - counted
        return nil
    }

    /// The system holds the request before any answer (a background session waits for a
    /// network the policy allows, or for a good moment when discretionary): that time is not
    /// the server's silence. The file's total time still counts.
    package mutating func heldBySystem(now: ContinuousClock.Instant) {
        guard outcome == nil, !responded else { return }
        lastActivity = now
        windowStart = now
        lastCall = now
    }

    /// `total` bytes of the body have arrived where the transport keeps them apart until
    /// the response ends (a download task's file): they count for the stall and rate
    /// deadlines, and once they are more than the file may still take the attempt stops,
    /// as ``body(_:now:)`` would stop it, before any is written.
    package mutating func holding(_ total: Int64, now: ContinuousClock.Instant) -> DownloadOutcome? {
        if let outcome { return outcome }
        guard total <= limit.maximum - offset else {
            outcome = integrity(
                pinned != nil ? "longer than the \(limit.maximum) bytes pinned for it" : "longer than the \(limit.maximum) bytes allowed")
            return outcome
        }
        skipSuspension(now: now)
        if total > held {
            windowBytes += total - held
            held = total
            lastActivity = now
        }
        return nil
    }

    /// Stops the attempt for a pause or a cancellation (the first outcome stays).
    package mutating func interrupt(_ reason: DownloadOutcome) -> DownloadOutcome {
        if outcome == nil { outcome = reason }
        return outcome!
    }

    /// Checks the deadlines at `now`: the outcome when the attempt broke one (no answer,
    /// silence, too slow, the whole file's time), else `nil`.
    package mutating func tick(now: ContinuousClock.Instant) -> DownloadOutcome? {
        if let outcome { return outcome }
        skipSuspension(now: now)
        outcome = deadlineBroken(now: now)
        return outcome
    }

    private mutating func deadlineBroken(now: ContinuousClock.Instant) -> DownloadOutcome? {
        let stall = Duration.seconds(deadlines.stall)
        if let giveUp, now > giveUp {
            return .failed(
                .connectionFailed(
                    url: url,
                    reason: "\(host) took longer than the \(Int(deadlines.total ?? 0)) s allowed for one file (\(ByteFormat.string(offset)) received)"
                ))
        }
        if !responded, now - started > stall {
            return .retryable(
                reason: "\(host) accepted the connection but sent no answer in \(Int(deadlines.stall)) s",
                validator: validator, worked: false)
        }
        if responded, now - lastActivity > stall {
            return .retryable(
                reason: "\(host) stopped sending for \(Int(deadlines.stall)) s after \(ByteFormat.string(offset))",
                validator: validator, worked: true)
        }
        guard deadlines.minimumRate > 0, now - windowStart >= .seconds(deadlines.rateWindow) else { return nil }
        let needed = Int64(Double(deadlines.minimumRate) * deadlines.rateWindow)
        if windowBytes < needed {
            return .failed(
                .connectionFailed(
                    url: url,
                    reason:
                        "\(host) is too slow: \(ByteFormat.string(windowBytes)) in \(Int(deadlines.rateWindow)) s, below the minimum of \(ByteFormat.string(deadlines.minimumRate))/s"
                ))
        }
        windowStart = now
        windowBytes = 0
        return nil
    }

    /// The outcome when the transfer ended: `failure` from the transport, or `nil` when the
    /// body ended normally.
    package mutating func end(_ failure: TransportFailure?) -> DownloadOutcome {
        if let outcome { return outcome }
        outcome = ending(failure)
        return outcome!
    }

    private func ending(_ failure: TransportFailure?) -> DownloadOutcome {
        switch failure {
        case .refused?:
            // Worth a retry only for a host that answered before (a server restarting):
            // the caller gives up at once on one that never did.
            return .retryable(reason: "\(host) refused the connection (is the server running?)", validator: validator, worked: false)
        case .unresolved?:
            return .failed(.connectionFailed(url: url, reason: "the host name '\(host.split(separator: ":").first ?? "")' does not resolve"))
        case .tls(let detail)?:
            return .failed(
                .connectionFailed(
                    url: url,
                    reason: "the TLS handshake with \(host) failed (\(detail)); if the server speaks plain HTTP, use http://"))
        case .notAllowed(let detail)?:
            return .failed(.networkNotAllowed(reason: detail))
        case .broken(let detail)?:
            if !responded {
                return .retryable(reason: "the request to \(host) failed without an answer (\(detail))", validator: validator, worked: false)
            }
            return .retryable(reason: "\(detail) after \(ByteFormat.string(offset))", validator: validator, worked: true)
        case nil:
            if !responded {
                return .retryable(reason: "\(host) closed the connection without an answer", validator: validator, worked: false)
            }
            if let end = expectedEnd, offset != end {
                return .retryable(reason: "connection closed after \(offset) of \(end) bytes", validator: validator, worked: true)
            }
            return .finished
        }
    }
}

/// A `Content-Range: bytes FIRST-LAST/TOTAL` header (`TOTAL` may be `*`).
package struct ContentRange: Sendable, Equatable {
    package let first: Int64
    package let last: Int64
    package let total: Int64?

    /// A range from its numbers.
    package init(first: Int64, last: Int64, total: Int64?) {
        (self.first, self.last, self.total) = (first, last, total)
    }

    /// The number of bytes the range holds (`Int64.max` for `bytes 0-9223372036854775807`,
    /// which holds one more: a header's numbers are the server's, so nothing here traps).
    package var count: Int64 {
        let (count, overflow) = (last - first).addingReportingOverflow(1)
        return overflow ? .max : count
    }

    /// The total of an unsatisfied-range header (`bytes */TOTAL`, sent with a 416), or `nil`.
    package static func unsatisfiedTotal(_ header: String?) -> Int64? {
        guard let header, header.count <= 200, header.hasPrefix("bytes */") else { return nil }
        return Int64(header.dropFirst(8)).flatMap { $0 >= 0 ? $0 : nil }
    }

    /// Parses the header; `nil` for anything else (and for `bytes */TOTAL`).
    package init?(_ header: String?) {
        guard let header, header.count <= 200, header.hasPrefix("bytes ") else { return nil }
        let spec = header.dropFirst(6)
        let halves = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]),
            first >= 0, last >= first
        else { return nil }
        if halves[1] == "*" {
            total = nil
        } else {
            guard let total = Int64(halves[1]), total > last else { return nil }
            self.total = total
        }
        self.first = first
        self.last = last
    }
}
