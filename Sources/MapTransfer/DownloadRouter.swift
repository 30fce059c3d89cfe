import Foundation
import MapModel
import MapPlatform
import Synchronization

#if canImport(FoundationNetworking)
    // URLSession on Linux and Android lives in a module of its own.
    import FoundationNetworking
#endif

/// The download session's delegate: each task's events go to the request waiting for it;
/// the file of a task no request waits for goes to the stash.
final class DownloadRouter: NSObject, URLSessionDownloadDelegate, Sendable {
    let stash: DownloadStash
    /// The most bytes a task no request waits for may bring (its request asked for a window).
    let window: Int64

    private struct State {
        /// Task → the request waiting for it.
        var waiting: [Int: RunningDownload] = [:]
        /// Request → its task, while the task runs (waited for or not).
        var tasks: [String: URLSessionDownloadTask] = [:]
        /// Task → its request.
        var requests: [Int: String] = [:]
        /// Tasks whose file is being handed to their request.
        var delivering: Set<Int> = []
        var redirects: [Int: Int] = [:]
        /// Whether the tasks of an earlier launch are known.
        var listed = false
        var listeners: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    init(stash: DownloadStash, window: Int64) {
        self.stash = stash
        self.window = window
    }

    /// Returns once the session's tasks from an earlier launch are adopted.
    func listed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if !state.listed { state.listeners.append(continuation) }
                return state.listed
            }
            if ready { continuation.resume() }
        }
    }

    /// Takes over the tasks the session still runs from an earlier launch: each waits for
    /// the request for its bytes.
    func adopt(_ tasks: [URLSessionTask]) {
        var resumed: [URLSessionTask] = []
        var useless: [URLSessionTask] = []
        let listeners = state.withLock { state in
            for case let task as URLSessionDownloadTask in tasks where task.state == .running || task.state == .suspended {
                // Only a window is worth keeping (a catalog's fetch is made again when needed).
                guard let request = Self.request(of: task), DownloadStash.windowLength(of: request) != nil else {
                    useless.append(task)
                    continue
                }
                state.tasks[request] = task
                state.requests[task.taskIdentifier] = request
                if task.state == .suspended { resumed.append(task) }
            }
            state.listed = true
            defer { state.listeners = [] }
            return state.listeners
        }
        for task in resumed { task.resume() }
        for task in useless { cancelAside(task) }
        for listener in listeners { listener.resume() }
    }

    /// The stash's name for the request a task was made for.
    static func request(of task: URLSessionTask) -> String? {
        guard let original = task.originalRequest, let url = original.url else { return nil }
        return DownloadStash.request(url, headers: [(name: "Range", value: original.value(forHTTPHeaderField: "Range") ?? "")])
    }

    /// Starts the task for `download`, or adopts the one running for its bytes. (A window
    /// that failed part-way is asked for again, not resumed from the system's resume data:
    /// a resumed task's answer would start inside the window, which the exchange refuses.)
    func start(_ download: RunningDownload, _ urlRequest: URLRequest, in session: URLSession) -> URLSessionDownloadTask {
        let adopted = state.withLock { state -> URLSessionDownloadTask? in
            guard let running = state.tasks[download.request], state.waiting[running.taskIdentifier] == nil else { return nil }
            state.waiting[running.taskIdentifier] = download
            return running
        }
        if let adopted { return adopted }
        let task = session.downloadTask(with: urlRequest)
        state.withLock { state in
            state.waiting[task.taskIdentifier] = download
            state.tasks[download.request] = task
            state.requests[task.taskIdentifier] = download.request
        }
        // A cancellation that came first never starts it.
        if Task.isCancelled {
            download.exchange.cancel()
            cancelAside(task)
            return task
        }
        task.resume()
        return task
    }

    /// Lets `task` go on without `download`, which ends (a pause): its file goes to the
    /// stash. `false` when the task is handing its file over already (or has ended).
    func detach(_ task: URLSessionTask, _ download: RunningDownload) -> Bool {
        state.withLock { state in
            let id = task.taskIdentifier
            guard state.waiting[id] === download, !state.delivering.contains(id) else { return false }
            state.waiting[id] = nil
            return true
        }
    }

    private func waiting(_ task: URLSessionTask) -> RunningDownload? {
        state.withLock { $0.waiting[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {
        guard let download = waiting(downloadTask) else {
            // No request waits (a pause, an earlier launch): bounded by its window all the same.
            let asked = Self.request(of: downloadTask).flatMap(DownloadStash.windowLength(of:)) ?? 0
            if totalBytesWritten > min(asked, window) { cancelAside(downloadTask) }
            return
        }
        guard !download.refused else { return }
        if !download.headGiven, let http = downloadTask.response as? HTTPURLResponse {
            download.headGiven = true
            if !download.exchange.head(ResponseHead(http)) {
                if download.refuse() { cancelAside(downloadTask) }
                return
            }
        }
        if !download.exchange.holding(totalBytesWritten), download.refuse() { cancelAside(downloadTask) }
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        let id = downloadTask.taskIdentifier
        let download = state.withLock { state in
            let download = state.waiting[id]
            if download != nil {
                state.delivering.insert(id)
            } else if let request = state.requests[id], state.tasks[request] === downloadTask {
                // Kept in the stash from here: a request asking now finds it there.
                state.tasks[request] = nil
            }
            return download
        }
        guard let http = downloadTask.response as? HTTPURLResponse else {
            download?.override(.failed(.broken("the download task ended without an HTTP response")))
            return
        }
        if let download {
            guard !download.refused else { return }
            download.override(Self.deliver(location, head: ResponseHead(http), to: download.exchange, headGiven: download.headGiven))
            return
        }
        // No request waits: a whole answer is kept for the request that will ask for it.
        guard http.statusCode == 200 || http.statusCode == 206, let request = Self.request(of: downloadTask) else { return }
        _ = try? stash.put(location, head: ResponseHead(http), request: request)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        let followed = state.withLock { state in
            state.redirects[task.taskIdentifier, default: 0] += 1
            return state.redirects[task.taskIdentifier]!
        }
        guard let problem = URLSessionRules.redirectProblem(newRequest, followed: followed) else {
            return completionHandler(newRequest)
        }
        // Refused as libcurl refuses it: a broken transfer, not the redirect's status.
        waiting(task)?.override(.failed(.broken(problem)))
        completionHandler(nil)
        cancelAside(task)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let id = task.taskIdentifier
        let download = state.withLock { state in
            state.delivering.remove(id)
            state.redirects[id] = nil
            if let request = state.requests.removeValue(forKey: id), state.tasks[request] === task { state.tasks[request] = nil }
            return state.waiting.removeValue(forKey: id)
        }
        guard let download else { return }
        download.end(download.overridden ?? error.map(URLSessionRules.ending) ?? .completed)
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        BackgroundEvents.finished(session.configuration.identifier)
    }

    /// Hands a finished response, kept in `file`, to `exchange`: its head (unless given
    /// already), then its bytes in chunks of 1 MiB. Blocking.
    static func deliver(_ file: URL, head: ResponseHead, to exchange: HTTPExchange, headGiven: Bool) -> HTTPEnding {
        if !headGiven, !exchange.head(head) { return .stopped }
        guard let input = try? SystemFile.openForReading(file.path) else {
            return .failed(.broken("the downloaded file could not be read"))
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: Int64 = 0
        while true {
            guard let count = try? buffer.withUnsafeMutableBytes({ try input.readChunk(into: $0, at: offset) }) else {
                return .failed(.broken("the downloaded file could not be read"))
            }
            if count == 0 { return .completed }
            let taken = buffer.withUnsafeBytes { exchange.write(UnsafeRawBufferPointer(rebasing: $0[..<count]), held: true) }
            guard taken else { return .stopped }
            offset += Int64(count)
        }
    }
}

/// The completion handlers the system gives an app it relaunched for a background
/// session's events (`application(_:handleEventsForBackgroundURLSession:completionHandler:)`),
/// each called on the main actor once its session has delivered every event, as Apple's
/// documentation of `urlSessionDidFinishEvents(forBackgroundURLSession:)` asks.
package enum BackgroundEvents {
    private struct State {
        var handlers: [String: [@MainActor () -> Void]] = [:]
        /// Sessions whose events ended before their handler came, and when.
        var finished: [String: ContinuousClock.Instant] = [:]
    }

    private static let state = Mutex(State())

    /// How long a session's end of events waits for the handler of the same wake.
    static let handlerLateness: Duration = .seconds(30)

    /// Keeps `handler` until the session `identifier` has delivered its events; calls it at
    /// once when they ended a moment ago (the handler came late).
    package static func store(_ identifier: String, _ handler: @escaping @MainActor () -> Void) {
        let now = state.withLock { state in
            if let ended = state.finished.removeValue(forKey: identifier), ContinuousClock.now - ended < handlerLateness { return true }
            state.handlers[identifier, default: []].append(handler)
            return false
        }
        if now { Task { @MainActor in handler() } }
    }

    /// The session `identifier` has delivered every event: every handler kept for it is called.
    package static func finished(_ identifier: String?) {
        guard let identifier else { return }
        let handlers = state.withLock { state in
            let handlers = state.handlers.removeValue(forKey: identifier) ?? []
            if handlers.isEmpty { state.finished[identifier] = .now }
            return handlers
        }
        for handler in handlers { Task { @MainActor in handler() } }
    }
}
