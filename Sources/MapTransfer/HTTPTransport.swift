package import Foundation
package import MapModel

/// An HTTP client that carries one GET at a time into an ``HTTPExchange``: it sends the
/// exchange's headers, reports the final head, the body and the time passing, stops when
/// told, and says how the request ended. It decides nothing (``DownloadAttempt`` does), so
/// every transport meets the same pins, ranges, deadlines and limits with the same words.
package protocol HTTPTransport: Sendable {
    /// The most bytes one request should ask for (a `Range` window), for a transport that
    /// cannot slow the network down to the disk's pace: bounded by the window, a response
    /// the client cannot hold back costs at most that much memory. `nil` asks for the rest
    /// of the file at once.
    var window: Int64? { get }

    /// Runs the GET of `url` to its end and says how it ended. Blocking work happens on
    /// the transport's own threads; cancelling the calling task stops the request.
    func perform(_ url: URL, exchange: HTTPExchange) async -> HTTPEnding
}

/// How a request ended, as a transport saw it.
package enum HTTPEnding: Sendable, Equatable {
    /// The body ended as the server sent it.
    case completed
    /// The exchange stopped it (it holds the decision).
    case stopped
    /// The network failed.
    case failed(TransportFailure)
}

/// The HTTP clients MapLoader carries downloads with.
package enum HTTPTransports {
    /// The transport named `name` (`curl`, `foundation`), if this build has it; URLSession
    /// keeps to the networks `policy` allows. With `background`, Foundation's transport
    /// runs download tasks in that background session, which keep what no request waited
    /// for in `stash`, where the system has background sessions (Apple platforms); elsewhere
    /// its data tasks resume a dropped or paused file at the byte it stopped at, which
    /// download tasks without the system's resume data would not.
    package static func named(
        _ name: String, policy: NetworkPolicy = .any, background: FoundationDownloadTransport.Background? = nil, stash: URL? = nil
    ) -> (any HTTPTransport)? {
        switch name {
        case "foundation":
            #if !canImport(FoundationNetworking)
                if let background, let stash {
                    return FoundationDownloadTransport.shared(background: background, policy: policy, stash: stash)
                }
            #endif
            return FoundationTransport.shared(policy)
        case "curl": return curl
        default: return nil
        }
    }

    /// libcurl, where the build has it.
    package static var curl: (any HTTPTransport)? {
        #if canImport(CCurl)
            return CurlTransport()
        #else
            return nil
        #endif
    }

    /// The names of the transports this build has.
    package static var available: [String] { (curl == nil ? [] : ["curl"]) + ["foundation"] }

    /// The default: libcurl where the build has it (Linux), else Foundation's URLSession.
    package static var standard: any HTTPTransport { curl ?? FoundationTransport.shared(.any) }
}
