import Foundation
import MapModel
import MapPlatform
import Synchronization

/// The final response head of a request (redirects and `100 Continue` are not passed on),
/// as any transport reads it.
package struct ResponseHead: Sendable, Equatable {
    package var status: Int
    /// `nil` when the server announced none (a chunked or endless body).
    package var contentLength: Int64?
    package var contentRange: String?
    package var etag: String?

    package init(status: Int, contentLength: Int64? = nil, contentRange: String? = nil, etag: String? = nil) {
        self.status = status
        self.contentLength = contentLength
        self.contentRange = contentRange.map { String($0.prefix(200)) }
        self.etag = etag.map { String($0.prefix(512)) }
    }
}

/// One request's state between a transport and its partial file: the transport reports
/// what the network did (a head, body bytes, the time passing, the end) and obeys the
/// answers (`false`: stop the request); ``DownloadAttempt`` decides, and this type writes
/// the bytes it accepts. Called from the transport's threads (libcurl's transfer thread,
/// URLSession's delegate queue) and from a cancellation, in any order.
package final class HTTPExchange: Sendable {
    private struct State {
        var attempt: DownloadAttempt
        var headDecided = false
        var cancelled = false
    }

    let output: SystemFile
    let control: TransferControl?
    /// The time the attempt's deadlines go by.
    let clock: any TransferClock
    let progress: @Sendable (Int64) -> Void
    private let state: Mutex<State>

    init(
        output: SystemFile, attempt: DownloadAttempt, control: TransferControl?, clock: any TransferClock,
        progress: @escaping @Sendable (Int64) -> Void
    ) {
        self.output = output
        self.control = control
        self.clock = clock
        self.progress = progress
        state = Mutex(State(attempt: attempt))
    }

    /// The request's headers: `Accept-Encoding: identity` (bytes as pinned), and `Range`
    /// with `If-Range` for a resumed or windowed request.
    package var requestHeaders: [(name: String, value: String)] {
        let (range, validator) = state.withLock { ($0.attempt.rangeHeader, $0.attempt.validator) }
        var headers = [("Accept-Encoding", "identity")]
        if let range {
            headers.append(("Range", range))
            if let validator { headers.append(("If-Range", validator)) }
        }
        return headers
    }

    /// Seconds of silence before the attempt is given up (a transport's own timeouts go a little beyond).
    package var stallSeconds: Double { state.withLock { $0.attempt.deadlines.stall } }

    /// The entity tag the server sent, to resume or continue against.
    package var validator: String? { state.withLock { $0.attempt.validator } }

    /// Stops the attempt as cancelled (from any thread).
    package func cancel() { state.withLock { $0.cancelled = true } }

    /// The final response head; `false` stops the request.
    package func head(_ head: ResponseHead) -> Bool {
        apply(state.withLock { decide(head, &$0) })
    }

    private func decide(_ head: ResponseHead, _ state: inout State) -> DownloadAttempt.HeadAction {
        state.headDecided = true
        return state.attempt.head(
            status: head.status, contentLength: head.contentLength, contentRange: head.contentRange,
            etag: head.etag, now: clock.now)
    }

    /// Carries out a head decision; `false` stops the request.
    private func apply(_ decision: DownloadAttempt.HeadAction?) -> Bool {
        switch decision {
        case nil, .append?:
            return true
        case .restart?:
            do {
                try output.truncate(to: 0)
                try output.seek(to: 0)
                return true
            } catch {
                _ = state.withLock { $0.attempt.interrupt(.failed(.storage(path: output.path, error))) }
                return false
            }
        case .stop?:
            return false
        }
    }

    /// `total` body bytes arrived where the transport keeps them until the response ends
    /// (``DownloadAttempt/holding(_:now:)``); `false` stops the request.
    package func holding(_ total: Int64) -> Bool {
        state.withLock { $0.attempt.holding(total, now: clock.now) == nil }
    }

    /// Body bytes; `false` stops the request before they are written. Body bytes before
    /// any head (a transport's fault) stop the request as an answer without a status.
    /// Bytes `held` already (a finished download task's file) are written even while the
    /// downloads are paused: a pause stops the network, and they came before it.
    package func write(_ bytes: UnsafeRawBufferPointer, held: Bool = false) -> Bool {
        let decision: DownloadAttempt.HeadAction? = state.withLock {
            $0.headDecided ? nil : decide(ResponseHead(status: 0), &$0)
        }
        guard apply(decision) else { return false }
        // A pause or a cancellation stops the request at the next byte, not the next tick:
        // a transport whose cancel lands late (URLSession) must not fill the file meanwhile.
        let paused = !held && control?.isPaused == true
        let refused = state.withLock { state in
            Self.interrupt(&state, paused: paused)
            return state.attempt.body(bytes.count, now: clock.now)
        }
        guard refused == nil else { return false }
        do {
            try output.writeAll(bytes)
        } catch {
            _ = state.withLock { $0.attempt.interrupt(.failed(.storage(path: output.path, error))) }
            return false
        }
        progress(state.withLock { $0.attempt.offset })
        return true
    }

    /// The time passing (a transport calls at least once a second while the request runs);
    /// `false` stops the request: cancelled, paused, or a deadline broken. While
    /// `heldBySystem` (no answer yet from a request the system holds back), the silence does
    /// not count (``DownloadAttempt/heldBySystem(now:)``).
    package func tick(heldBySystem: Bool = false) -> Bool {
        let paused = control?.isPaused == true
        return state.withLock { state in
            Self.interrupt(&state, paused: paused)
            if heldBySystem { state.attempt.heldBySystem(now: clock.now) }
            return state.attempt.tick(now: clock.now) == nil
        }
    }

    /// Ends the attempt as cancelled or paused when it is (the first outcome stays).
    private static func interrupt(_ state: inout State, paused: Bool) {
        if state.cancelled { _ = state.attempt.interrupt(.failed(.cancelled)) }
        if paused { _ = state.attempt.interrupt(.paused(validator: state.attempt.validator)) }
    }

    /// The request's end as the transport saw it; the attempt's outcome. The partial file
    /// is flushed whatever the outcome (a resume continues from its bytes), on the blocking
    /// threads, never Swift's cooperative pool.
    package func finish(_ ending: HTTPEnding) async -> DownloadOutcome {
        let outcome = state.withLock { state in
            if state.cancelled { _ = state.attempt.interrupt(.failed(.cancelled)) }
            switch ending {
            case .completed: return state.attempt.end(nil)
            case .failed(let failure): return state.attempt.end(failure)
            case .stopped:
                return state.attempt.interrupt(.retryable(reason: "the transfer stopped", validator: nil, worked: false))
            }
        }
        let output = self.output
        _ = try? await offActor { try output.sync() }
        return outcome
    }
}
