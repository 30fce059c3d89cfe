package import Foundation
package import MapModel
import MapPlatform
import Synchronization

#if canImport(FoundationNetworking)
    // URLSession on Linux and Android lives in a module of its own.
    import FoundationNetworking
#endif

/// URLSession download tasks as a transport: the system writes each response to a file of
/// its own, and when the task ends this transport hands that file to the exchange, which
/// takes its bytes as it takes a server's. On Apple platforms the session may be a
/// background session (``Background``): its tasks go on while the app is suspended or not
/// running. A task that ends while no request waits for it (one left running by a pause,
/// or one the system finished while the app was away) leaves its file in the
/// ``DownloadStash``, where the next request for the same bytes finds it: nothing is
/// fetched twice. A task the system still runs when the app comes back is adopted by the
/// request for its bytes.
///
/// Each request asks for a window of at most ``window`` bytes, as data tasks do: while the
/// app is suspended, the window in flight of each file goes on (the next is asked for when
/// the app runs again, or is woken for the session's events). A task whose file grows past
/// what the file may still bring is cancelled while the app runs; a task nobody waits for
/// is kept only when it answered a window and holds no more than that window. In a
/// background session the system holds a task back until a network the policy allows is
/// there (and a good moment, when discretionary) instead of failing it: that wait does not
/// count as the server's silence, only toward the file's total time.
package final class FoundationDownloadTransport: HTTPTransport {
    /// A background session: its identifier (one per app and data directory; a process
    /// may have one session of each identifier) and whether the system may wait for a
    /// good moment (power, Wi-Fi) to run its tasks.
    package struct Background: Sendable, Hashable {
        package var identifier: String
        package var discretionary: Bool

        package init(identifier: String, discretionary: Bool) {
            self.identifier = identifier
            self.discretionary = discretionary
        }
    }

    private static let instances = Mutex<[String: FoundationDownloadTransport]>([:])

    /// The transport of the background session `background` names, made for the data
    /// directory whose stash is `stash` and the networks `policy` allows: one per
    /// identifier and process, since the system gives a session's events to one session
    /// object only. The first call for an identifier makes it; later calls get that one
    /// whatever else they say (an app uses one configuration per identifier).
    package static func shared(background: Background, policy: NetworkPolicy, stash: URL) -> FoundationDownloadTransport {
        instances.withLock { instances in
            if let made = instances[background.identifier] { return made }
            let made = FoundationDownloadTransport(
                background: background, policy: policy, stash: DownloadStash(folder: stash.standardizedFileURL))
            instances[background.identifier] = made
            return made
        }
    }

    /// 8 MiB a request, as for data tasks.
    package let window: Int64? = 8 << 20
    package let background: Background
    private let session: URLSession
    private let router: DownloadRouter

    private init(background: Background, policy: NetworkPolicy, stash: DownloadStash) {
        self.background = background
        router = DownloadRouter(stash: stash, window: window ?? .max)
        let configuration = Self.configuration(background)
        URLSessionRules.configure(configuration, policy: policy)
        configuration.isDiscretionary = background.discretionary
        let queue = OperationQueue()
        queue.name = "MapLoader downloads"
        // One at a time: a finished task's file is handed over before the next event.
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: router, delegateQueue: queue)
        let router = self.router
        // Tasks an earlier launch left running are adopted before any request starts one.
        session.getAllTasks { tasks in router.adopt(tasks) }
        DispatchQueue.global(qos: .utility).async { stash.expire() }
    }

    /// The session's configuration: a background one of `background`'s identifier on
    /// Apple platforms; elsewhere (FoundationNetworking has no background sessions, and
    /// the tests run this transport there) an ephemeral one, whose download tasks behave
    /// alike while the process runs.
    private static func configuration(_ background: Background) -> URLSessionConfiguration {
        #if !canImport(FoundationNetworking)
            // Apple's URLSession only: the system runs the tasks out of process, and
            // relaunches the app in the background when they end.
            let configuration = URLSessionConfiguration.background(withIdentifier: background.identifier)
            configuration.sessionSendsLaunchEvents = true
            return configuration
        #else
            return .ephemeral
        #endif
    }

    package func perform(_ url: URL, exchange: HTTPExchange) async -> HTTPEnding {
        let request = DownloadStash.request(url, headers: exchange.requestHeaders)
        await router.listed()
        let stash = router.stash
        if let entry = await SiteClient.offPool({ stash.take(request) }) ?? nil {
            let ending = try? await offActor {
                defer { FileSystem.remove(entry.body.path) }
                return DownloadRouter.deliver(entry.body, head: entry.head, to: exchange, headGiven: false)
            }
            return ending ?? .stopped
        }
        var urlRequest = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: exchange.stallSeconds + 5)
        for header in exchange.requestHeaders { urlRequest.setValue(header.value, forHTTPHeaderField: header.name) }
        let running = Mutex<(task: URLSessionDownloadTask?, download: RunningDownload?)>((nil, nil))
        let ticker = Task { [router] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                if Task.isCancelled { return }
                let (task, download) = running.withLock { ($0.task, $0.download) }
                guard let task, let download else { continue }
                if exchange.control?.isPaused == true {
                    // Paused: the task goes on by itself and leaves its file in the stash,
                    // where the request after the resume finds it (or finds it running).
                    guard router.detach(task, download) else { continue }  // being handed over
                    _ = exchange.tick()
                    download.end(.stopped)
                    return
                }
                // No answer yet in a background session: the system holds the task back.
                if !exchange.tick(heldBySystem: task.response == nil) {
                    cancelAside(task)
                    return
                }
            }
        }
        defer { ticker.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<HTTPEnding, Never>) in
                let download = RunningDownload(request: request, exchange: exchange, continuation: continuation)
                let task = router.start(download, urlRequest, in: session)
                running.withLock { $0 = (task, download) }
            }
        } onCancel: {
            exchange.cancel()
            if let task = running.withLock({ $0.task }) { cancelAside(task) }
        }
    }
}

/// One request waiting for its download task.
final class RunningDownload: Sendable {
    /// The stash's name for the request.
    let request: String
    let exchange: HTTPExchange
    private let waiting: Mutex<CheckedContinuation<HTTPEnding, Never>?>
    private let ending = Mutex<HTTPEnding?>(nil)
    private let headState = Mutex(false)
    private let refusedState = Mutex(false)

    init(request: String, exchange: HTTPExchange, continuation: CheckedContinuation<HTTPEnding, Never>) {
        self.request = request
        self.exchange = exchange
        waiting = Mutex(continuation)
    }

    /// The ending decided before the session's completion (a refused redirect, a handed-over file).
    var overridden: HTTPEnding? { ending.withLock { $0 } }

    /// Ends the request this way whatever the session reports next.
    func override(_ decided: HTTPEnding) { ending.withLock { $0 = $0 ?? decided } }

    /// Whether the exchange has the response head.
    var headGiven: Bool {
        get { headState.withLock { $0 } }
        set { headState.withLock { $0 = newValue } }
    }

    /// Refuses the rest of the response; true the first time.
    func refuse() -> Bool {
        refusedState.withLock { refused in
            defer { refused = true }
            return !refused
        }
    }

    var refused: Bool { refusedState.withLock { $0 } }

    /// Ends the wait (once).
    func end(_ ending: HTTPEnding) {
        waiting.withLock { $0.take() }?.resume(returning: ending)
    }
}
