/// Faults the server injects into its own responses, for testing clients against a bad network.
///
/// Faults apply only to GET requests that would be answered with a 200 or 206 file body.
/// Every field is off by default, so `FaultPlan()` serves files faithfully.
package struct FaultPlan: Sendable, Equatable {
    /// Send only this many body bytes of a response, then shut the connection down,
    /// so the client sees a body shorter than its `Content-Length`. `nil` disables it.
    package var dropAfterBytes: Int?

    /// Truncate only the first `dropCount` responses whose body is longer than
    /// `dropAfterBytes`; later responses are complete. `nil` truncates every such response.
    package var dropCount: Int?

    /// Fraction (0...1) of eligible GET requests answered with `errorStatus` instead of the file.
    /// Which requests fail follows a PRNG seeded with `seed`, in the order requests arrive.
    package var errorRate: Double

    /// Status code for injected errors: 500 or 503 (default 503).
    package var errorStatus: Int

    /// Throttle each response body to about this many bytes per second. `nil` is unthrottled.
    package var bytesPerSecond: Int?

    /// Flip one byte (XOR 0xFF) at this absolute file offset in every body that includes it.
    package var corruptOffset: Int64?

    /// Seed for the fault PRNG; the same seed and request order give the same faults.
    package var seed: UInt64

    /// Answer GETs of matching paths with a body that never ends (an attacker's endless
    /// data): the file's bytes, then more, until the client goes away. `nil` disables it.
    package var endless: EndlessBody?

    /// Answer requests for matching paths with a redirect instead of the file (a CDN, a
    /// loop, another scheme). `nil` disables it.
    package var redirect: RedirectFault?

    /// Creates a fault plan; every argument defaults to "no fault".
    package init(
        dropAfterBytes: Int? = nil,
        dropCount: Int? = nil,
        errorRate: Double = 0,
        errorStatus: Int = 503,
        bytesPerSecond: Int? = nil,
        corruptOffset: Int64? = nil,
        seed: UInt64 = 0,
        endless: EndlessBody? = nil,
        redirect: RedirectFault? = nil
    ) {
        self.endless = endless
        self.redirect = redirect
        self.dropAfterBytes = dropAfterBytes
        self.dropCount = dropCount
        self.errorRate = errorRate
        self.errorStatus = errorStatus
        self.bytesPerSecond = bytesPerSecond
        self.corruptOffset = corruptOffset
        self.seed = seed
    }
}

/// A response body that never ends, for testing that clients bound what they accept.
package struct EndlessBody: Sendable, Equatable {
    /// How the endless body is framed.
    package enum Framing: Sendable, Equatable {
        /// No `Content-Length`: the body runs until the connection closes.
        case unannounced
        /// `Transfer-Encoding: chunked`, chunk after chunk, never the last one.
        case chunked
        /// A `Content-Length` of this many bytes (a lie when it differs from the file).
        case announced(Int64)
    }

    /// The framing of the body.
    package var framing: Framing
    /// Paths (as requested, e.g. `/blobs/`, `/catalog.json`) that get the endless body:
    /// every path that contains one of these.
    package var paths: [String]

    /// An endless body for requests whose path contains one of `paths`.
    package init(_ framing: Framing, paths: [String]) {
        self.framing = framing
        self.paths = paths
    }

    /// Whether a request for `path` gets the endless body.
    package func applies(to path: String) -> Bool { paths.contains { path.contains($0) } }
}

/// A redirect the server answers instead of a file: `302 Found` with a `Location` of
/// `prefix` followed by the request's own target (another server holding the same site, a
/// `file://` URL), or of the request's own target (a loop).
package struct RedirectFault: Sendable, Equatable {
    /// What comes before the request's target in `Location`; `nil` redirects a request to
    /// itself, for ever.
    package var prefix: String?
    /// Paths (as requested) that are redirected: every path that contains one of these.
    package var paths: [String]

    /// Redirects requests for `paths` to `prefix` + their target (`nil`: to themselves).
    package init(to prefix: String?, paths: [String]) {
        self.prefix = prefix
        self.paths = paths
    }

    /// The `Location` for a request of `target`, or nil where it is served.
    package func location(for target: String) -> String? {
        guard paths.contains(where: { target.contains($0) }) else { return nil }
        return (prefix ?? "") + target
    }
}
