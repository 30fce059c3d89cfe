import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A site on an HTTP(S) server. Any static server works: the client needs GET and, for
/// resuming, `Range` (it copes with servers that ignore it).
///
/// Each download streams the body to its partial file as it arrives (bounded memory),
/// resumes with `Range` + `If-Range` after a dropped connection, and retries with
/// exponential backoff and jitter, reporting lost and found connections.
public struct HTTPSource: SiteSource {
    public let baseURL: URL
    let retry: RetryPolicy
    let onConnection: @Sendable (ConnectionEvent) -> Void

    /// A source for the site at `baseURL`.
    public init(baseURL: URL, retry: RetryPolicy = .init(),
                onConnection: @escaping @Sendable (ConnectionEvent) -> Void = { _ in }) {
        self.baseURL = baseURL
        self.retry = retry
        self.onConnection = onConnection
    }

    public func download(_ path: String, to file: URL, limit: TransferLimit,
                         progress: @escaping @Sendable (Int64) -> Void) async throws(MapLoaderError) {
        let url = baseURL.appendingPathComponent(path)
        var validator: String?
        var lostOnce = false
        for attempt in 1...retry.attempts {
            let outcome = await HTTPDownload.run(url: url, file: file, limit: limit, validator: validator, progress: progress)
            switch outcome {
            case .finished:
                if lostOnce { onConnection(.found(url: url.absoluteString)) }
                return
            case .failed(let error):
                throw error
            case .retryable(let reason, let newValidator):
                validator = newValidator ?? validator
                guard attempt < retry.attempts else {
                    throw .connectionFailed(url: url.absoluteString, reason: "\(reason) after \(attempt) attempts")
                }
                let delay = retry.delay(beforeRetry: attempt)
                lostOnce = true
                onConnection(.lost(url: url.absoluteString, reason: reason, retryIn: delay))
                do {
                    try await Task.sleep(nanoseconds: UInt64(delay * 1e9))
                } catch {
                    throw .cancelled
                }
            }
        }
    }
}
