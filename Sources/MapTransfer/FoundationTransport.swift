package import Foundation
package import MapModel
import Synchronization

#if canImport(FoundationNetworking)
    // URLSession on Linux and Android lives in a module of its own.
    import FoundationNetworking
#endif

/// Foundation's URLSession as a transport: the default on Apple platforms and Android
/// (where no libcurl comes with the system), and on Linux through FoundationNetworking,
/// where the tests run it beside libcurl.
///
/// Data tasks hand each piece of body to the session's delegate, which writes it to the
/// partial file on the delegate queue (never Swift's cooperative pool); at the first byte
/// too many it cancels the task from another thread (``cancelAside(_:)``) and drops what
/// still comes unread. Each running task has a session of its own (``SessionPool``).
/// URLSession does not slow the network to the delegate's pace (on Linux it queues every
/// piece it reads for the delegate, and a cancel lands only when the process-wide queue of
/// FoundationNetworking gets a turn), so each request asks for a window of at most
/// ``window`` bytes with `Range`: an honest server's answer is then at most a window, held
/// back by HTTP's own framing, and a resume after a drop or a pause continues the partial
/// file without fetching a byte twice.
package final class FoundationTransport: HTTPTransport {
    /// The transport loaders of one network policy share.
    package static func shared(_ policy: NetworkPolicy) -> FoundationTransport {
        instances.withLock { instances in
            if let made = instances[policy] { return made }
            let made = FoundationTransport(policy: policy)
            instances[policy] = made
            return made
        }
    }

    private static let instances = Mutex<[NetworkPolicy: FoundationTransport]>([:])

    /// 8 MiB a request: a 2 GB map is 250 requests.
    package let window: Int64? = 8 << 20
    private let sessions: SessionPool

    /// A transport with sessions of its own, which use only the networks `policy` allows
    /// (on Apple platforms; elsewhere ``HTTPSource`` checks the network before each request).
    package init(policy: NetworkPolicy = .any) { sessions = SessionPool(policy: policy) }

    package func perform(_ url: URL, exchange: HTTPExchange) async -> HTTPEnding {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: exchange.stallSeconds + 5)
        for header in exchange.requestHeaders { request.setValue(header.value, forHTTPHeaderField: header.name) }
        let session = sessions.take()
        let running = Mutex<RunningRequest?>(nil)
        // A session goes back to the pool only once its task completed: FoundationNetworking
        // stalls a session running two tasks (see ``SessionPool``).
        defer { sessions.give(session, reusable: running.withLock { $0?.completed ?? false }) }
        let task = session.session.dataTask(with: request)
        let ticker = Task {
            // The deadlines and a pause are checked four times a second (libcurl's own calls
            // come at least once a second).
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                // Not after the request ended: a late tick would turn a whole body into a pause.
                if Task.isCancelled { return }
                if !exchange.tick() {
                    cancelAside(task)
                    return
                }
            }
        }
        defer { ticker.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<HTTPEnding, Never>) in
                let request = RunningRequest(exchange: exchange, continuation: continuation)
                running.withLock { $0 = request }
                session.router.start(task, request)
            }
        } onCancel: {
            exchange.cancel()
            cancelAside(task)
        }
    }
}

/// A URLSession that runs one task at a time, with its delegate.
private struct PooledSession: Sendable {
    let session: URLSession
    let router: SessionRouter

    init(policy: NetworkPolicy) {
        let configuration = URLSessionConfiguration.ephemeral
        URLSessionRules.configure(configuration, policy: policy)
        router = SessionRouter()
        let queue = OperationQueue()
        queue.name = "MapLoader download"
        // One at a time: a task's pieces are written in the order they came.
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: router, delegateQueue: queue)
    }
}

/// Idle sessions, reused so that a session's connection serves many requests. Each session
/// runs one task at a time: FoundationNetworking (Linux, Android) stops delivering to a
/// session's delegate when one of two running tasks is cancelled from it, and buffers what
/// the network brings meanwhile (gigabytes of an endless body, measured); sessions of
/// their own cancel at once.
private final class SessionPool: Sendable {
    /// More idle sessions than this are invalidated instead of kept.
    private static let capacity = 8
    private let idle = Mutex<[PooledSession]>([])
    let policy: NetworkPolicy

    init(policy: NetworkPolicy) { self.policy = policy }

    func take() -> PooledSession { idle.withLock { $0.popLast() } ?? PooledSession(policy: policy) }

    func give(_ session: PooledSession, reusable: Bool) {
        let kept = idle.withLock { idle in
            guard reusable, idle.count < Self.capacity else { return false }
            idle.append(session)
            return true
        }
        // A session keeps its delegate until it is invalidated.
        if !kept { session.session.finishTasksAndInvalidate() }
    }
}

/// One data task's exchange, and the caller waiting for its end.
private final class RunningRequest: Sendable {
    let exchange: HTTPExchange
    private let waiting: Mutex<CheckedContinuation<HTTPEnding, Never>?>
    /// Redirects followed so far.
    let redirects = Mutex(0)
    private let delivered = Mutex(false)

    private let ending = Mutex<HTTPEnding?>(nil)

    /// The ending the delegate decided on (a refused redirect), if any.
    var overridden: HTTPEnding? { ending.withLock { $0 } }

    /// Ends the request this way whatever the session reports next.
    func override(_ decided: HTTPEnding) { ending.withLock { $0 = $0 ?? decided } }

    /// Whether the session delivered the task's completion.
    var completed: Bool { delivered.withLock { $0 } }

    private let refusedBody = Mutex(false)

    /// Whether the exchange refused the body: what still comes is dropped unread.
    var refused: Bool { refusedBody.withLock { $0 } }

    /// Refuses the rest of the body; true the first time.
    func refuse() -> Bool {
        refusedBody.withLock { refused in
            defer { refused = true }
            return !refused
        }
    }

    /// The session delivered the task's completion.
    func markCompleted() { delivered.withLock { $0 = true } }

    init(exchange: HTTPExchange, continuation: CheckedContinuation<HTTPEnding, Never>) {
        self.exchange = exchange
        waiting = Mutex(continuation)
    }

    /// Ends the wait (once).
    func end(_ ending: HTTPEnding) {
        waiting.withLock { $0.take() }?.resume(returning: ending)
    }
}

/// A session's delegate: routes its task's events to the request's exchange.
private final class SessionRouter: NSObject, URLSessionDataDelegate, Sendable {
    private let running = Mutex<[Int: RunningRequest]>([:])

    /// Starts `task` for `request` (a cancellation that came first never starts it).
    func start(_ task: URLSessionDataTask, _ request: RunningRequest) {
        running.withLock { $0[task.taskIdentifier] = request }
        if Task.isCancelled {
            request.exchange.cancel()
            finish(task, .stopped)
            return
        }
        task.resume()
    }

    private func request(_ task: URLSessionTask) -> RunningRequest? {
        running.withLock { $0[task.taskIdentifier] }
    }

    private func finish(_ task: URLSessionTask, _ ending: HTTPEnding) {
        running.withLock { $0.removeValue(forKey: task.taskIdentifier) }?.end(ending)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        // A redirect refused (the session then hands it over as the answer) is no answer,
        // and neither is its body, which FoundationNetworking still delivers.
        guard let request = request(dataTask), request.overridden == nil, let http = response as? HTTPURLResponse else {
            _ = request(dataTask)?.refuse()
            cancelAside(dataTask)
            return completionHandler(.cancel)
        }
        let taken = request.exchange.head(ResponseHead(http))
        // FoundationNetworking ignores the disposition: a refused answer is cancelled here too.
        if !taken, request.refuse() { cancelAside(dataTask) }
        completionHandler(taken ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        // Pieces that come after a refusal (the cancel lands late) are dropped at once, so the
        // delegate keeps up with the network until it does.
        guard let request = request(dataTask), !request.refused else { return }
        let taken = data.withUnsafeBytes { request.exchange.write($0) }
        if !taken, request.refuse() { cancelAside(dataTask) }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        let followed = request(task)?.redirects.withLock { count in
            count += 1
            return count
        }
        let problem = URLSessionRules.redirectProblem(newRequest, followed: followed ?? .max)
        guard let problem else { return completionHandler(newRequest) }
        // Refused as libcurl refuses it: a broken transfer, not the redirect's status.
        request(task)?.override(.failed(.broken(problem)))
        completionHandler(nil)
        cancelAside(task)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let request = request(task)
        request?.markCompleted()
        finish(task, request?.overridden ?? error.map(URLSessionRules.ending) ?? .completed)
    }
}
