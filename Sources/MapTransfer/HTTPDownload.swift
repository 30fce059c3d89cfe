import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MapModel
import MapPlatform

/// One HTTP GET that streams its body onto the end of a partial file.
package final class HTTPDownload: Sendable {
    /// How one attempt ended.
    package enum Outcome: Sendable {
        case finished
        case failed(MapLoaderError)
        /// Stopped by a pause (``TransferControl``); the partial file is kept for `Range`.
        case paused(validator: String?)
        /// Worth another attempt; `validator` is the entity tag to resume against;
        /// `worked` tells whether the server answered this attempt at all (only a server
        /// that answered is worth retrying).
        case retryable(reason: String, validator: String?, worked: Bool)
    }

    private struct State {
        package var handle: FileHandle?
        package var offset: Int64 = 0
        package var validator: String?
        package var outcome: Outcome?
        package var continuation: CheckedContinuation<Outcome, Never>?
        /// When the attempt started, last heard from the server, and how many bytes came
        /// since the current rate window began.
        package var started = ContinuousClock.now
        package var responded = false
        package var lastActivity = ContinuousClock.now
        package var windowStart = ContinuousClock.now
        package var windowBytes: Int64 = 0
        /// The server ignored a windowed `Range` and sends the whole file.
        package var windowIgnored = false
    }

    private let url: URL
    private let file: URL
    private let limit: TransferLimit
    private let deadlines: TransferDeadlines
    private let giveUp: ContinuousClock.Instant?
    /// The last byte offset to fetch in this attempt (a bandwidth cap fetches a file in
    /// windows); `nil` for the rest of the file.
    private let window: Int64?
    private let control: TransferControl?
    private let progress: @Sendable (Int64) -> Void
    private let state = Mutex(State())

    private init(url: URL, file: URL, limit: TransferLimit, deadlines: TransferDeadlines,
                 giveUp: ContinuousClock.Instant?, window: Int64?, control: TransferControl?,
                 progress: @escaping @Sendable (Int64) -> Void) {
        self.giveUp = giveUp
        self.window = window
        self.control = control
        self.url = url
        self.file = file
        self.limit = limit
        self.deadlines = deadlines
        self.progress = progress
    }

    /// `host:port` of the URL, for messages.
    package var host: String { HTTPDownload.host(of: url) }

    package static func host(of url: URL) -> String {
        (url.host ?? url.absoluteString) + (url.port.map { ":\($0)" } ?? "")
    }

    /// One URLSession for every download: no cache, no cookies, nothing written outside the
    /// data directory. Each download is its own delegate through ``SessionRouter``.
    package static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.urlCredentialStorage = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return URLSession(configuration: configuration, delegate: SessionRouter.shared, delegateQueue: nil)
    }()

    /// Runs one attempt: `Range` from the partial file's length, `If-Range: validator`.
    /// - Parameter giveUp: when the whole file's time (``TransferDeadlines/total``) runs out.
    package static func run(url: URL, file: URL, limit: TransferLimit, validator: String?, deadlines: TransferDeadlines,
                    giveUp: ContinuousClock.Instant? = nil, window: Int64? = nil, control: TransferControl? = nil,
                    progress: @escaping @Sendable (Int64) -> Void) async -> Outcome {
        let download = HTTPDownload(url: url, file: file, limit: limit, deadlines: deadlines, giveUp: giveUp,
                                    window: window, control: control, progress: progress)
        let handle: FileHandle
        let offset: Int64
        do {
            handle = try TransferFile.openForAppend(file)
            offset = Int64(try handle.offset())
        } catch {
            return .failed(.storage(path: file.path, error))
        }
        if case .exactly(let size) = limit, offset == size {
            try? handle.close()
            return .finished
        }
        if offset > limit.maximum {
            try? handle.close()
            try? FileManager.default.removeItem(at: file)
            return .retryable(reason: "the partial file was longer than pinned", validator: nil, worked: true)
        }
        download.state.withLock {
            $0.handle = handle
            $0.offset = offset
        }
        var request = URLRequest(url: url)
        // URLSession's own timer restarts on every byte; the watchdog below enforces the
        // deadlines, this is only a backstop.
        request.timeoutInterval = deadlines.stall + 5
        request.cachePolicy = .reloadIgnoringLocalCacheData
        if let window {
            request.setValue("bytes=\(offset)-\(window)", forHTTPHeaderField: "Range")
            if let validator { request.setValue(validator, forHTTPHeaderField: "If-Range") }
        } else if offset > 0 {
            request.setValue("bytes=\(offset)-", forHTTPHeaderField: "Range")
            if let validator { request.setValue(validator, forHTTPHeaderField: "If-Range") }
        }
        let task = session.dataTask(with: request)
        SessionRouter.shared.register(download, for: task)
        defer { SessionRouter.shared.unregister(task) }
        // The watchdog ticks on its own dispatch queue, not on Swift's cooperative pool, so
        // deadlines hold even while an app keeps the pool busy.
        let watchdog = DispatchSource.makeTimerSource(queue: watchdogQueue)
        watchdog.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
        watchdog.setEventHandler {
            if download.control?.isPaused == true {
                download.finish(.paused(validator: download.state.withLock { $0.validator }))
                task.cancel()
            } else if let stalled = download.stalled(now: .now) {
                download.finish(stalled)
                task.cancel()
            }
        }
        watchdog.resume()
        defer { watchdog.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // A cancellation may have come first (the handler below ran already): then the
                // request is never started and the outcome is given at once.
                let decided: Outcome? = download.state.withLock { state in
                    if state.outcome == nil, Task.isCancelled { state.outcome = .failed(.cancelled) }
                    guard state.outcome == nil else {
                        try? state.handle?.close()
                        state.handle = nil
                        return state.outcome
                    }
                    state.continuation = continuation
                    state.started = .now
                    state.lastActivity = .now
                    state.windowStart = .now
                    return nil
                }
                if let decided { return continuation.resume(returning: decided) }
                task.resume()
            }
        } onCancel: {
            download.finish(.failed(.cancelled))
            task.cancel()
        }
    }

    /// The outcome when the attempt broke a deadline: no answer, silence, or too slow.
    private func stalled(now: ContinuousClock.Instant) -> Outcome? {
        state.withLock { state in
            guard state.outcome == nil else { return nil }
            let stall = Duration.seconds(deadlines.stall)
            if let giveUp, now > giveUp {
                return .failed(.connectionFailed(url: url.absoluteString,
                                                 reason: "\(host) took longer than the \(Int(deadlines.total ?? 0)) s allowed for one file (\(ByteFormat.string(state.offset)) received)"))
            }
            if !state.responded, now - state.started > stall {
                return .retryable(reason: "\(host) accepted the connection but sent no answer in \(Int(deadlines.stall)) s",
                                  validator: state.validator, worked: false)
            }
            if state.responded, now - state.lastActivity > stall {
                return .retryable(reason: "\(host) stopped sending for \(Int(deadlines.stall)) s after \(ByteFormat.string(state.offset))",
                                  validator: state.validator, worked: true)
            }
            guard deadlines.minimumRate > 0, now - state.windowStart >= .seconds(deadlines.rateWindow) else { return nil }
            let needed = Int64(Double(deadlines.minimumRate) * deadlines.rateWindow)
            if state.windowBytes < needed {
                return .failed(.connectionFailed(url: url.absoluteString,
                                                 reason: "\(host) is too slow: \(ByteFormat.string(state.windowBytes)) in \(Int(deadlines.rateWindow)) s, below the minimum of \(ByteFormat.string(deadlines.minimumRate))/s"))
            }
            state.windowStart = now
            state.windowBytes = 0
            return nil
        }
    }

    package func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        guard let http = response as? HTTPURLResponse else {
            finish(.failed(.connectionFailed(url: url.absoluteString, reason: "not an HTTP response")))
            completionHandler(.cancel)
            return
        }
        let etag = http.value(forHTTPHeaderField: "ETag")
        let decision: Outcome? = state.withLock { state in
            state.validator = etag
            state.responded = true
            state.lastActivity = .now
            let announced = http.expectedContentLength
            state.windowIgnored = window != nil && http.statusCode == 200
            let end = state.windowIgnored ? nil : window.map { $0 + 1 }
            if case .exactly(let size) = limit, [200, 206].contains(http.statusCode), announced >= 0,
               announced != (end ?? size) - (http.statusCode == 206 ? state.offset : 0) {
                return .failed(.integrityFailed(what: url.absoluteString,
                                                detail: "the server announces \(announced) bytes where \((end ?? size) - state.offset) are pinned"))
            }
            switch http.statusCode {
            case 200:
                if state.offset > 0 {
                    // The server ignored Range or the file changed (If-Range failed): start over.
                    do {
                        try state.handle?.truncate(atOffset: 0)
                        state.offset = 0
                    } catch {
                        return .failed(.storage(path: file.path, error))
                    }
                }
                return nil
            case 206:
                let range = http.value(forHTTPHeaderField: "Content-Range") ?? ""
                guard range.hasPrefix("bytes \(state.offset)-") else {
                    return .failed(.integrityFailed(what: url.absoluteString,
                                                    detail: "server resumed at the wrong offset (\(range))"))
                }
                return nil
            case 416 where { if case .exactly(let n) = limit { return n == state.offset } else { return false } }():
                return .finished
            case 408, 429, 500...599:
                return .retryable(reason: "HTTP \(http.statusCode)", validator: etag, worked: true)
            default:
                return .failed(.httpStatus(url: url.absoluteString, status: http.statusCode))
            }
        }
        if let decision {
            finish(decision)
            completionHandler(.cancel)
        } else {
            completionHandler(.allow)
        }
    }

    package func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let failure: Outcome? = state.withLock { state in
            guard state.outcome == nil, let handle = state.handle else { return nil }
            guard state.offset + Int64(data.count) <= limit.maximum else {
                return .failed(.integrityFailed(what: url.absoluteString,
                                                detail: "longer than the \(limit.maximum) bytes pinned for it"))
            }
            do {
                try handle.write(contentsOf: data)
            } catch {
                return .failed(.storage(path: file.path, error))
            }
            state.offset += Int64(data.count)
            state.lastActivity = .now
            state.windowBytes += Int64(data.count)
            return nil
        }
        if let failure {
            finish(failure)
            dataTask.cancel()
        } else {
            progress(state.withLock { $0.offset })
        }
    }

    package func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let outcome: Outcome = state.withLock { state in
            if let error {
                let code = (error as? URLError)?.code
                switch code {
                case .cancelled?:
                    return .failed(.cancelled)
                case .cannotConnectToHost?:
                    return .failed(.connectionFailed(url: url.absoluteString,
                                                     reason: "\(host) refused the connection (is the server running?)"))
                case .cannotFindHost?, .dnsLookupFailed?:
                    return .failed(.connectionFailed(url: url.absoluteString,
                                                     reason: "the host name '\(url.host ?? "")' does not resolve"))
                case .timedOut? where !state.responded:
                    return .retryable(reason: "the request to \(host) timed out without an answer",
                                      validator: state.validator, worked: false)
                default:
                    return .retryable(reason: error.localizedDescription, validator: state.validator, worked: state.responded)
                }
            }
            if case .exactly(let size) = limit, state.offset != (state.windowIgnored ? nil : window.map { $0 + 1 }) ?? size {
                return .retryable(reason: "connection closed after \(state.offset) of \(size) bytes",
                                  validator: state.validator, worked: state.responded)
            }
            return .finished
        }
        finish(outcome)
    }

    /// Records the first outcome, closes the file and resumes the waiting caller once.
    fileprivate func finish(_ outcome: Outcome) {
        let continuation: CheckedContinuation<Outcome, Never>? = state.withLock { state in
            if state.outcome == nil {
                state.outcome = outcome
                try? state.handle?.synchronize()
                try? state.handle?.close()
                state.handle = nil
            }
            defer { state.continuation = nil }
            return state.continuation.map { c in c }
        }
        continuation?.resume(returning: state.withLock { $0.outcome! })
    }
}

/// The queue every download's deadline watchdog ticks on.
private let watchdogQueue = DispatchQueue(label: "MapLoader.transfer-deadlines")

/// Routes the shared session's delegate calls to the download that owns each task, so one
/// session (and its connection pool) serves every download.
package final class SessionRouter: NSObject, URLSessionDataDelegate, Sendable {
    static let shared = SessionRouter()
    private let downloads = Mutex<[Int: HTTPDownload]>([:])

    func register(_ download: HTTPDownload, for task: URLSessionTask) {
        downloads.withLock { $0[task.taskIdentifier] = download }
    }

    func unregister(_ task: URLSessionTask) {
        _ = downloads.withLock { $0.removeValue(forKey: task.taskIdentifier) }
    }

    private func download(_ task: URLSessionTask) -> HTTPDownload? {
        downloads.withLock { $0[task.taskIdentifier] }
    }

    package func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        guard let download = download(dataTask) else { return completionHandler(.cancel) }
        download.urlSession(session, dataTask: dataTask, didReceive: response, completionHandler: completionHandler)
    }

    package func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        download(dataTask)?.urlSession(session, dataTask: dataTask, didReceive: data)
    }

    package func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        download(task)?.urlSession(session, task: task, didCompleteWithError: error)
    }
}
