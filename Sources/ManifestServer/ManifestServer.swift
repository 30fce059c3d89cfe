import Dispatch
import Foundation
import MapPlatform
import Synchronization

/// A small static-file HTTP/1.1 server for a map site folder, with optional fault injection.
///
/// Serves GET and HEAD for regular files under `root`, with single byte ranges, ETag /
/// Last-Modified validators and `Connection: close`. Each connection gets its own thread.
///
/// ```swift
/// let server = ManifestServer(root: siteFolder)
/// let port = try server.start()   // http://127.0.0.1:<port>/manifest.json
/// defer { server.stop() }
/// ```
package final class ManifestServer: Sendable {
    private let root: URL
    private let host: String
    private let requestedPort: Int
    private let log: (@Sendable (String) -> Void)?
    private let state: Mutex<ServerState>
    /// Entered by the accept thread and by every connection thread; `stop()` waits on it.
    private let workers = DispatchGroup()

    /// The fault plan given at init.
    package let faults: FaultPlan
    /// Seconds a client has to send its whole request head; slower ones get 408 and are closed.
    package let headTimeout: Double
    /// Seconds one send may wait for a client that does not read; past it the connection
    /// is closed (a client that never reads holds no thread or descriptor for longer).
    package let sendTimeout: Double

    /// Creates a server for the files under `root`; nothing is bound until `start()`.
    /// - Parameters:
    ///   - root: Folder to serve; nothing outside it (symlink targets included) is served.
    ///   - host: Numeric address to bind, `127.0.0.1` by default.
    ///   - port: Port to bind; 0 picks a free ephemeral port.
    ///   - faults: Faults to inject into GET responses; none by default.
    ///   - headTimeout: Seconds a client has to send its request head.
    ///   - sendTimeout: Seconds a send waits for a client that reads nothing.
    ///   - log: Called once per answered request with a line like `GET /a.pmtiles 206 1234B`,
    ///     plus ` dropped`, ` injected-error`, ` client-gone`, ` file-shrunk` or
    ///     ` out-of-descriptors` when that happened.
    ///     Called on connection threads; it must not call `stop()`.
    package init(
        root: URL, host: String = "127.0.0.1", port: Int = 0, faults: FaultPlan = .init(),
        headTimeout: Double = 10, sendTimeout: Double = 30, log: (@Sendable (String) -> Void)? = nil
    ) {
        self.root = root
        self.headTimeout = headTimeout
        self.sendTimeout = sendTimeout
        self.host = host
        self.requestedPort = port
        self.faults = faults
        self.log = log
        self.state = Mutex(ServerState(faults: FaultState(plan: faults)))
    }

    /// Binds and listens, then serves on background threads. Returns the bound port.
    /// - Throws: `ManifestServerError` if the root is not a folder, the address cannot be
    ///   bound, or the server was started before (a stopped server cannot be restarted).
    @discardableResult
    package func start() throws -> Int {
        let rootPath = root.withUnsafeFileSystemRepresentation { $0.map { String(cString: $0) } } ?? ""
        guard let canonicalRoot = ServedFile.canonicalRoot(rootPath) else {
            throw ManifestServerError.rootNotDirectory(rootPath)
        }
        return try state.withLock { state in
            guard state.phase == .idle else { throw ManifestServerError.alreadyStarted }
            let (listener, port) = try Socket.listen(host: host, port: requestedPort)
            state.phase = .running
            state.listener = listener
            workers.enter()
            let thread = Thread { [self] in acceptLoop(listener: listener, root: canonicalRoot) }
            thread.name = "ManifestServer accept :\(port)"
            thread.start()
            return port
        }
    }

    /// Stops accepting, cuts open connections (clients see a truncated response), and waits
    /// up to 5 seconds for the server's threads to finish. Safe to call more than once.
    package func stop() {
        state.withLock { state in
            state.phase = .stopped
            if let listener = state.listener { Socket.shutdownBoth(listener) }  // wakes accept()
            for connection in state.connections { Socket.shutdownBoth(connection) }
        }
        _ = workers.wait(timeout: .now() + 5)
    }

    /// A snapshot of the counters since start or the last `resetStatistics()`.
    package var statistics: ServerStatistics {
        state.withLock { $0.statistics }
    }

    /// Sets all counters back to zero (the fault PRNG and drop count are not reset).
    package func resetStatistics() {
        state.withLock { $0.statistics = ServerStatistics() }
    }

    // MARK: - Accepting

    private func acceptLoop(listener: Int32, root: String) {
        defer { workers.leave() }
        accepting: while true {
            guard let fd = Socket.accept(listener) else {
                let code = errno
                if state.withLock({ $0.phase != .running }) { break accepting }
                switch code {
                case EINTR, ECONNABORTED, EAGAIN, EPROTO: continue accepting
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    usleep(10_000)
                    continue accepting
                default: break accepting
                }
            }
            let registered = state.withLock { state in
                guard state.phase == .running else { return false }
                state.connections.insert(fd)
                workers.enter()
                return true
            }
            guard registered else {
                Socket.close(fd)
                break accepting
            }
            let connection = Connection(fd: fd, root: root, server: self)
            let thread = Thread { [self] in
                connection.run()
                state.withLock { _ = $0.connections.remove(fd) }  // stop() only shuts down fds in this set
                Socket.close(fd)
                workers.leave()
            }
            thread.name = "ManifestServer connection"
            thread.start()
        }
        state.withLock { $0.listener = nil }  // before close, so stop() never touches a reused fd
        Socket.close(listener)
    }

    // MARK: - Used by connections

    func decideFaults(bodyLength: Int64) -> FaultDecision {
        state.withLock { state in
            if state.faults.shouldInjectError() {
                state.statistics.injectedErrors += 1
                return .injectError(faults.errorStatus)
            }
            let limit = state.faults.dropLimit(bodyLength: bodyLength)
            if limit != nil { state.statistics.droppedResponses += 1 }
            return .send(dropAfter: limit)
        }
    }

    func recordResponse(status: Int) {
        state.withLock { $0.statistics.recordResponse(status: status) }
    }

    func recordBodyBytes(_ count: Int64, path: String) {
        state.withLock { $0.statistics.recordBodyBytes(count, path: path) }
    }

    func emitLog(_ line: String) {
        log?(line)
    }
}

/// Everything about a server that changes after init; guarded by its mutex.
struct ServerState: Sendable {
    enum Phase: Sendable { case idle, running, stopped }

    var phase = Phase.idle
    /// The listening socket while the accept thread owns it.
    var listener: Int32?
    /// Open connection sockets; removed before they are closed.
    var connections: Set<Int32> = []
    var statistics = ServerStatistics()
    var faults: FaultState
}
