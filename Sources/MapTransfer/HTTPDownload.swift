import CCurl
package import Foundation
import MapModel
import MapPlatform
import Synchronization

/// One HTTP GET that streams its body onto the end of a partial file, through libcurl.
///
/// libcurl hands each piece of body to ``Transfer/write`` on the transfer's own thread and
/// reads no more from the socket until that call returns: the body goes to disk as it
/// arrives, a body longer than allowed stops at the first byte too many, and a server
/// faster than the disk is simply read more slowly. Memory stays at one buffer per
/// download, whatever the server sends. (Foundation's URLSession on Linux queues every
/// piece it reads for its delegate with no such back-pressure: an endless body grew a
/// client past 13 GB.) The decisions (status, ranges, lengths, deadlines) are made by
/// ``DownloadAttempt``, a value; this type only feeds it.
package enum HTTPDownload {
    package typealias Outcome = DownloadOutcome

    /// `host:port` of the URL, for messages.
    package static func host(of url: URL) -> String {
        (url.host ?? url.absoluteString) + (url.port.map { ":\($0)" } ?? "")
    }

    /// Runs one attempt: `Range` from the partial file's length, `If-Range: validator`.
    /// - Parameters:
    ///   - giveUp: when the whole file's time (``TransferDeadlines/total``) runs out.
    ///   - window: the last byte offset to fetch in this attempt (a bandwidth cap fetches a
    ///     file in windows); `nil` for the rest of the file.
    package static func run(
        url: URL, file: URL, limit: TransferLimit, validator: String?, deadlines: TransferDeadlines,
        giveUp: ContinuousClock.Instant? = nil, window: Int64? = nil, control: TransferControl? = nil,
        clock: any TransferClock = SystemTransferClock(), progress: @escaping @Sendable (Int64) -> Void
    ) async -> Outcome {
        let output: SystemFile
        let offset: Int64
        do {
            output = try SystemFile.openForAppend(file.path)
            offset = try output.size()
        } catch {
            return .failed(.storage(path: file.path, error))
        }
        let attempt = DownloadAttempt(
            url: url.absoluteString, host: host(of: url), limit: limit, window: window,
            offset: offset, validator: validator, deadlines: deadlines, giveUp: giveUp,
            now: clock.now)
        if let decided = attempt.before {
            if case .retryable = decided { FileSystem.removeTree(file) }
            return decided
        }
        let transfer = Transfer(url: url, output: output, attempt: attempt, control: control, clock: clock, progress: progress)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                // A cancellation that came first never starts the request.
                if Task.isCancelled { return continuation.resume(returning: .failed(.cancelled)) }
                let thread = Thread { continuation.resume(returning: transfer.perform()) }
                thread.name = "MapLoader download"
                thread.start()
            }
        } onCancel: {
            transfer.cancel()
        }
    }
}

/// One attempt's state, shared by libcurl's callbacks (on the transfer's thread) and a
/// cancellation (from any thread).
private final class Transfer: Sendable {
    private struct State {
        var attempt: DownloadAttempt
        /// The response head being read (each redirect and `100 Continue` starts anew).
        var head = ResponseHead()
        var headDecided = false
        var cancelled = false
    }

    private struct ResponseHead {
        var status = 0
        var contentLength: Int64?
        var contentRange: String?
        var etag: String?
        var location = false
    }

    let url: URL
    let output: SystemFile
    let control: TransferControl?
    /// The time the attempt's deadlines go by.
    let clock: any TransferClock
    let progress: @Sendable (Int64) -> Void
    private let state: Mutex<State>

    init(
        url: URL, output: SystemFile, attempt: DownloadAttempt, control: TransferControl?, clock: any TransferClock,
        progress: @escaping @Sendable (Int64) -> Void
    ) {
        self.url = url
        self.output = output
        self.control = control
        self.clock = clock
        self.progress = progress
        state = Mutex(State(attempt: attempt))
    }

    func cancel() { state.withLock { $0.cancelled = true } }

    /// Runs the request to its end on the calling thread (blocking) and says how it went.
    func perform() -> DownloadOutcome {
        let (range, validator) = state.withLock { ($0.attempt.rangeHeader, $0.attempt.validator) }
        var headers: [String] = ["Accept-Encoding: identity"]
        if let range {
            headers.append("Range: \(range)")
            if let validator { headers.append("If-Range: \(validator)") }
        }
        let stallSeconds = state.withLock { $0.attempt.deadlines.stall }
        let result = CurlEasy.perform(
            url: url.absoluteString, headers: headers, connectTimeout: stallSeconds + 5,
            context: Unmanaged.passUnretained(self).toOpaque())
        let outcome = state.withLock { state in
            switch result {
            case .completed: return state.attempt.end(nil)
            case .failed(let failure): return state.attempt.end(failure)
            case .stopped:
                return state.attempt.interrupt(.retryable(reason: "the transfer stopped", validator: nil, worked: false))
            }
        }
        // Kept durable whatever the outcome: a resume continues from these bytes.
        try? output.sync()
        return outcome
    }

    /// A header line from libcurl; `false` stops the transfer.
    func header(_ line: Substring) -> Bool {
        let decision: DownloadAttempt.HeadAction? = state.withLock { state in
            if line.hasPrefix("HTTP/") {
                state.head = ResponseHead()
                state.head.status = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
                return nil
            }
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            guard trimmed.isEmpty else {
                Self.record(trimmed, in: &state.head)
                return nil
            }
            // The end of a head: informational answers and redirects libcurl follows are not decided on.
            let head = state.head
            if (100..<200).contains(head.status) || ((300..<400).contains(head.status) && head.location) { return nil }
            return decide(&state)
        }
        return apply(decision)
    }

    private static func record(_ field: String, in head: inout ResponseHead) {
        guard let colon = field.firstIndex(of: ":") else { return }
        let name = field[..<colon].lowercased()
        let value = field[field.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        switch name {
        case "content-length": head.contentLength = Int64(value)
        case "content-range": head.contentRange = String(value.prefix(200))
        case "etag": head.etag = String(value.prefix(512))
        case "location": head.location = true
        default: break
        }
    }

    private func decide(_ state: inout State) -> DownloadAttempt.HeadAction {
        state.headDecided = true
        let head = state.head
        return state.attempt.head(
            status: head.status, contentLength: head.contentLength, contentRange: head.contentRange,
            etag: head.etag, now: clock.now)
    }

    /// Carries out a head decision; `false` stops the transfer.
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

    /// Body bytes from libcurl; `false` stops the transfer before they are written.
    func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let decision: DownloadAttempt.HeadAction? = state.withLock { $0.headDecided ? nil : decide(&$0) }
        guard apply(decision) else { return false }
        let refused = state.withLock { $0.attempt.body(bytes.count, now: clock.now) }
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

    /// libcurl's periodic call (at least once a second, and as bytes move); `false` stops
    /// the transfer: cancelled, paused, or a deadline broken.
    func tick() -> Bool {
        let paused = control?.isPaused == true
        return state.withLock { state in
            if state.cancelled { _ = state.attempt.interrupt(.failed(.cancelled)) }
            if paused { _ = state.attempt.interrupt(.paused(validator: state.attempt.validator)) }
            return state.attempt.tick(now: clock.now) == nil
        }
    }

    static func from(_ context: UnsafeMutableRawPointer?) -> Transfer? {
        context.map { Unmanaged<Transfer>.fromOpaque($0).takeUnretainedValue() }
    }
}

/// libcurl's easy interface, as MapLoader uses it: one blocking GET with callbacks into a
/// ``Transfer``.
private enum CurlEasy {
    /// libcurl's process-wide set-up, once.
    static let initialised: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// How a transfer ended.
    enum Ending {
        /// The body ended as the server sent it.
        case completed
        /// A callback stopped it (the ``Transfer`` holds the decision).
        case stopped
        case failed(TransportFailure)
    }

    /// Performs the GET with callbacks into the ``Transfer`` at `context`.
    static func perform(
        url: String, headers: [String], connectTimeout: Double,
        context: UnsafeMutableRawPointer
    ) -> Ending {
        guard initialised, let pooled = HandlePool.shared.take() else { return .failed(.broken("libcurl could not start a transfer")) }
        let handle = pooled.handle
        defer { HandlePool.shared.give(pooled) }
        var list: UnsafeMutablePointer<curl_slist>?
        for header in headers { list = curl_slist_append(list, header) }
        defer { curl_slist_free_all(list) }
        let errors = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errors.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        defer { errors.deallocate() }
        _ = maploader_curl_set_string(handle, CURLOPT_URL, url)
        _ = maploader_curl_set_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = maploader_curl_set_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = maploader_curl_set_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        _ = maploader_curl_set_long(handle, CURLOPT_FOLLOWLOCATION, 1)
        _ = maploader_curl_set_long(handle, CURLOPT_MAXREDIRS, 5)
        _ = maploader_curl_set_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(connectTimeout * 1000))
        _ = maploader_curl_set_long(handle, CURLOPT_TCP_KEEPALIVE, 1)
        _ = maploader_curl_set_long(handle, CURLOPT_BUFFERSIZE, 128 * 1024)
        _ = maploader_curl_set_string(handle, CURLOPT_USERAGENT, "MapLoader")
        _ = maploader_curl_set_list(handle, CURLOPT_HTTPHEADER, list)
        _ = maploader_curl_set_pointer(handle, CURLOPT_ERRORBUFFER, errors)
        _ = maploader_curl_set_pointer(handle, CURLOPT_HEADERDATA, context)
        _ = maploader_curl_set_data_callback(handle, CURLOPT_HEADERFUNCTION) { pointer, size, count, context in
            guard let transfer = Transfer.from(context), let pointer else { return 0 }
            let bytes = UnsafeRawBufferPointer(start: pointer, count: size * count)
            return transfer.header(Substring(decoding: bytes, as: UTF8.self)) ? size * count : 0
        }
        _ = maploader_curl_set_pointer(handle, CURLOPT_WRITEDATA, context)
        _ = maploader_curl_set_data_callback(handle, CURLOPT_WRITEFUNCTION) { pointer, size, count, context in
            guard let transfer = Transfer.from(context), let pointer else { return 0 }
            return transfer.write(UnsafeRawBufferPointer(start: pointer, count: size * count)) ? size * count : 0
        }
        _ = maploader_curl_set_long(handle, CURLOPT_NOPROGRESS, 0)
        _ = maploader_curl_set_pointer(handle, CURLOPT_XFERINFODATA, context)
        _ = maploader_curl_set_progress_callback(handle) { context, _, _, _, _ in
            Transfer.from(context)?.tick() == false ? 1 : 0
        }
        let code = curl_easy_perform(handle)
        let detail = errors.pointee != 0 ? String(cString: errors) : String(cString: curl_easy_strerror(code))
        switch code {
        case CURLE_OK:
            return .completed
        case CURLE_WRITE_ERROR, CURLE_ABORTED_BY_CALLBACK:
            return .stopped
        case CURLE_COULDNT_CONNECT:
            return .failed(.refused)
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .failed(.unresolved)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return .failed(.tls(detail))
        default:
            return .failed(.broken(detail))
        }
    }
}

/// Idle libcurl handles, reused so that a connection (and its TLS session) to a host
/// serves many downloads: a bandwidth cap fetches a file in many small windows, and an
/// install fetches many small files.
private final class HandlePool: Sendable {
    /// A libcurl easy handle. Proof for `@unchecked Sendable`: a handle is only ever used
    /// by one thread at a time; it leaves the pool (under the pool's lock) for exactly one
    /// transfer on that transfer's thread, and comes back only when the transfer is over.
    struct Handle: @unchecked Sendable {
        let handle: UnsafeMutableRawPointer
    }

    static let shared = HandlePool()
    /// More idle handles than this are cleaned up instead of kept.
    private static let capacity = 8
    private let idle = Mutex<[Handle]>([])

    /// An idle handle, reset to defaults (its connections and caches stay), or a new one.
    func take() -> Handle? {
        if let handle = idle.withLock({ $0.popLast() }) {
            curl_easy_reset(handle.handle)
            return handle
        }
        return curl_easy_init().map(Handle.init)
    }

    /// Gives a handle back after its transfer.
    func give(_ handle: Handle) {
        let kept = idle.withLock { idle in
            guard idle.count < Self.capacity else { return false }
            idle.append(handle)
            return true
        }
        if !kept { curl_easy_cleanup(handle.handle) }
    }
}
