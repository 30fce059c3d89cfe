/// Counters the server keeps about what it has answered; read them with `ManifestServer.statistics`.
///
/// Counts are updated before the bytes go out, so once a client has received a response
/// the statistics already include it.
package struct ServerStatistics: Sendable, Equatable {
    /// Number of requests answered with any status (requests that closed before a full
    /// header block are not counted).
    package var requests: Int = 0

    /// File body bytes written in 200 and 206 responses: the bytes a client downloaded.
    /// Headers and the short bodies of error responses are not counted.
    package var bodyBytesSent: Int64 = 0

    /// `bodyBytesSent` split by decoded request path, e.g. `"/maps/a.pmtiles"`.
    package var bodyBytesSentByPath: [String: Int64] = [:]

    /// Number of responses per HTTP status code.
    package var statusCounts: [Int: Int] = [:]

    /// Responses cut short on purpose by `FaultPlan.dropAfterBytes`.
    package var droppedResponses: Int = 0

    /// Responses replaced by `FaultPlan.errorStatus`.
    package var injectedErrors: Int = 0

    /// Creates empty statistics.
    package init() {}

    mutating func recordResponse(status: Int) {
        requests += 1
        statusCounts[status, default: 0] += 1
    }

    mutating func recordBodyBytes(_ count: Int64, path: String) {
        bodyBytesSent += count
        bodyBytesSentByPath[path, default: 0] += count
    }
}
