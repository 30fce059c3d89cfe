import Foundation
import MapModel

#if canImport(FoundationNetworking)
    // URLSession on Linux and Android lives in a module of its own.
    import FoundationNetworking
#endif

/// What both URLSession transports (data tasks, ``FoundationTransport``; download tasks,
/// ``FoundationDownloadTransport``) do alike: the session's settings, the redirects they
/// follow, how a response head and a task's error read to the exchange.
enum URLSessionRules {
    /// Redirects one request may follow, as libcurl is told.
    static let maximumRedirects = 5

    /// No cache (pinned bytes are checked, never served from a cache), no cookies, no
    /// stored credentials; the deadlines are the exchange's. On Apple platforms the system
    /// keeps requests off the networks `policy` leaves out, and says so in the error.
    static func configure(_ configuration: URLSessionConfiguration, policy: NetworkPolicy) {
        #if !canImport(FoundationNetworking)
            // Apple's URLSession only (FoundationNetworking has neither).
            configuration.allowsExpensiveNetworkAccess = policy.allowsExpensive
            configuration.allowsConstrainedNetworkAccess = policy.allowsConstrained
        #endif
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCredentialStorage = nil
        configuration.timeoutIntervalForResource = 7 * 24 * 3600
    }

    /// Why the redirect to `newRequest`, the `followed`th of its request, is refused; `nil`
    /// to follow it (within `http` and `https`, up to ``maximumRedirects``).
    static func redirectProblem(_ newRequest: URLRequest, followed: Int) -> String? {
        let scheme = newRequest.url?.scheme?.lowercased()
        if scheme != "http" && scheme != "https" {
            return "a redirect to '\(scheme ?? "")' (only http and https are followed)"
        }
        if followed > maximumRedirects { return "more than \(maximumRedirects) redirects" }
        return nil
    }

    /// What a task's error means to the exchange.
    static func ending(_ error: any Error) -> HTTPEnding {
        guard let error = error as? URLError else { return .failed(.broken(error.localizedDescription)) }
        let detail = error.localizedDescription
        #if !canImport(FoundationNetworking)
            // Apple's URLSession only: the request needed a network the policy leaves out.
            switch error.networkUnavailableReason {
            case .expensive?: return .failed(.notAllowed("the network is expensive (cellular or a personal hotspot)"))
            case .constrained?: return .failed(.notAllowed("the network is in Low Data Mode"))
            case .cellular?: return .failed(.notAllowed("the only network is cellular"))
            default: break
            }
        #endif
        switch error.code {
        case .cancelled:
            return .stopped
        case .cannotConnectToHost:
            return .failed(.refused)
        case .cannotFindHost, .dnsLookupFailed:
            return .failed(.unresolved)
        case .secureConnectionFailed, .serverCertificateHasBadDate, .serverCertificateUntrusted,
            .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .clientCertificateRejected,
            .clientCertificateRequired:
            return .failed(.tls(detail))
        case .unknown where detail.contains("SSL") || detail.contains("TLS"):
            // FoundationNetworking names no code for libcurl's TLS failures (a handshake with a
            // plain-HTTP server: "OpenSSL/3.0: … wrong version number"); its words say it.
            return .failed(.tls(detail))
        default:
            return .failed(.broken(detail))
        }
    }
}

extension ResponseHead {
    /// The head of an HTTP response as URLSession gives it.
    init(_ http: HTTPURLResponse) {
        self.init(
            status: http.statusCode,
            contentLength: http.value(forHTTPHeaderField: "Content-Length").flatMap { Int64($0) },
            contentRange: http.value(forHTTPHeaderField: "Content-Range"),
            etag: http.value(forHTTPHeaderField: "ETag"))
    }
}

/// Cancels `task` from a thread of its own, never the caller's. FoundationNetworking before
/// Swift 6.4 waits in `cancel()` for the session's work queue (`workQueue.sync`;
/// swift-corelibs-foundation #5412, fixed by #5417), and that queue stays busy as long as a
/// server sends: a cancel on the delegate queue stopped the delegate while the network queued
/// up to 1.8 GB for it (measured: AttackTests' endless bodies), and one in a cancellation
/// handler or on Swift's cooperative pool would hold a thread that must not wait. Apple's
/// URLSession cancels asynchronously anyway.
func cancelAside(_ task: URLSessionTask) {
    DispatchQueue.global(qos: .utility).async { task.cancel() }
}
