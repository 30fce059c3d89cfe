package import Foundation
package import MapModel
package import MapPlatform
import Synchronization

/// A site on an HTTP(S) server. Any static server works: the client needs GET and, for
/// resuming, `Range` (it copes with servers that ignore it).
///
/// Each download streams the body to its partial file as it arrives (bounded memory),
/// resumes with `Range` + `If-Range` after a dropped connection, and retries with
/// exponential backoff and jitter, reporting lost and found connections.
package struct HTTPSource: SiteSource {
    package let baseURL: URL
    package let retry: RetryPolicy
    package let deadlines: TransferDeadlines
    package let onConnection: @Sendable (ConnectionEvent) -> Void
    /// The bandwidth cap shared with the loader's other downloads, if any.
    package let limiter: RateLimiter?
    /// The time retries, deadlines and a bandwidth cap's pauses go by.
    package let clock: any TransferClock
    /// The HTTP client that carries the requests.
    package let transport: any HTTPTransport
    /// Which networks may carry the requests.
    package let policy: NetworkPolicy
    /// The network requests would go over now (read before each attempt).
    package let conditions: @Sendable () -> NetworkConditions?
    /// Pauses and resumes the requests of the operation this source is for (``controlled(by:)``).
    package private(set) var control: TransferControl?
    /// Hosts (`host:port`) that answered a request of this source: worth retrying when a
    /// later request gets no answer (a server restarting), unlike a host that never did.
    private let answered = AnsweredHosts()

    /// A source for the site at `baseURL`.
    package init(
        baseURL: URL, retry: RetryPolicy, deadlines: TransferDeadlines,
        limiter: RateLimiter? = nil, transport: any HTTPTransport = HTTPTransports.standard,
        policy: NetworkPolicy = .any, conditions: @escaping @Sendable () -> NetworkConditions? = NetworkConditions.current,
        clock: any TransferClock = SystemTransferClock(),
        onConnection: @escaping @Sendable (ConnectionEvent) -> Void = { _ in }
    ) {
        self.policy = policy
        self.conditions = conditions
        self.clock = clock
        self.transport = transport
        self.baseURL = baseURL
        self.retry = retry
        self.deadlines = deadlines
        self.limiter = limiter
        self.onConnection = onConnection
    }

    /// This server for the operation `control` pauses (the hosts that answered and the
    /// bandwidth cap shared).
    package func controlled(by control: TransferControl?) -> any SiteSource {
        var source = self
        source.control = control
        return source
    }

    package func download(
        _ path: String, to file: URL, limit: TransferLimit,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws(MapLoaderError) {
        let url = baseURL.appendingPathComponent(path)
        let giveUp = deadlines.total.map { clock.now + .seconds($0) }
        let capWindow = limiter.map { max(16_384, $0.bytesPerSecond / 4) }
        // One file's retries, whatever the number of its requests: a file fetched in windows
        // gets the attempts one fetched whole gets.
        var retries = Retries()
        guard case .exactly(let size) = limit, let chunk = [capWindow, transport.window].compactMap({ $0 }).min() else {
            try await fetch(url, to: file, limit: limit, window: nil, giveUp: giveUp, retries: &retries, progress: progress)
            return
        }
        var validator: String?
        // Under a bandwidth cap the file comes in windows of a quarter second's worth,
        // each a Range request of its own, each waiting for its turn at the cap before it is
        // requested: the network carries no more than the cap allows, whatever the client
        // buffers. A transport that cannot hold the network back asks for windows too.
        while true {
            let have = FileStatus.of(file.path)?.size ?? 0
            guard have < size else {
                try await fetch(
                    url, to: file, limit: limit, window: nil, validator: validator, giveUp: giveUp, retries: &retries, progress: progress)
                return
            }
            let end = min(size, have + chunk) - 1
            let pause = limiter?.take(Int(end - have + 1), now: clock.now) ?? .zero
            if pause > .zero {
                do {
                    try await clock.sleep(for: pause)
                } catch {
                    throw .cancelled
                }
            }
            // Each window asks with the entity tag of the one before (`If-Range`): a file
            // replaced mid-download comes whole instead of spliced from two versions.
            validator = try await fetch(
                url, to: file, limit: limit, window: end, validator: validator, giveUp: giveUp, retries: &retries, progress: progress)
        }
    }

    /// The retries a file has used, across its requests.
    private struct Retries {
        /// Failed requests so far.
        var attempt = 0
        /// Whether the connection was lost and not yet found again (for the events).
        var lost = false
        /// Whether the server answered any of them.
        var everWorked = false
    }

    /// One request (bytes up to `window`, or to the end), retried as the policy says with
    /// the file's `retries`; returns the entity tag the server sent.
    @discardableResult
    private func fetch(
        _ url: URL, to file: URL, limit: TransferLimit, window: Int64?, validator known: String? = nil,
        giveUp: ContinuousClock.Instant?, retries: inout Retries, progress: @escaping @Sendable (Int64) -> Void
    ) async throws(MapLoaderError) -> String? {
        var validator = known
        while true {
            if let control {
                do {
                    try await control.waitWhilePaused()
                } catch {
                    throw .cancelled
                }
            }
            // The network is checked before each request: a device that moved from Wi-Fi to
            // cellular mid-download stops there, keeping its partial file.
            if policy != .any, let refusal = policy.refusal(conditions()) {
                throw .networkNotAllowed(reason: refusal)
            }
            let run = { [validator] in
                await HTTPDownload.run(
                    url: url, file: file, limit: limit, validator: validator, deadlines: self.deadlines,
                    giveUp: giveUp, window: window, control: control, transport: self.transport, clock: self.clock,
                    progress: progress)
            }
            let ending: HTTPDownload.Ending
            if let control { ending = await control.counting(run) } else { ending = await run() }
            switch ending.outcome {
            case .paused(let newValidator):
                // The partial file stays; the next request continues it after resume().
                validator = newValidator ?? validator
                continue
            case .finished:
                answered.insert(url)
                if retries.lost { onConnection(.found(url: url.absoluteString)) }
                retries.lost = false
                return ending.validator ?? validator
            case .failed(let error):
                throw error
            case .retryable(let reason, let newValidator, let worked):
                retries.attempt += 1
                validator = newValidator ?? validator
                retries.everWorked = retries.everWorked || worked || answered.contains(url)
                if worked { answered.insert(url) }
                // Retries are for a server that answered: one that never did fails at once.
                guard retries.everWorked else { throw .connectionFailed(url: url.absoluteString, reason: reason) }
                guard retries.attempt < retry.attempts else {
                    throw .connectionFailed(url: url.absoluteString, reason: "\(reason) after \(retries.attempt) attempts")
                }
                let delay = retry.delay(beforeRetry: retries.attempt)
                if let giveUp, clock.now + .seconds(delay) > giveUp {
                    throw .connectionFailed(
                        url: url.absoluteString,
                        reason: "\(reason); gave up after the \(Int(deadlines.total ?? 0)) s allowed for one file")
                }
                retries.lost = true
                onConnection(.lost(url: url.absoluteString, reason: reason, retryIn: delay))
                do {
                    try await clock.sleep(for: .seconds(delay))
                } catch {
                    throw .cancelled
                }
            }
        }
    }
}

/// The hosts that answered one source's requests (a source lives as long as its loader).
private final class AnsweredHosts: Sendable {
    private let hosts = Mutex<Set<String>>([])

    func insert(_ url: URL) { _ = hosts.withLock { $0.insert(HTTPDownload.host(of: url)) } }

    func contains(_ url: URL) -> Bool { hosts.withLock { $0.contains(HTTPDownload.host(of: url)) } }
}
