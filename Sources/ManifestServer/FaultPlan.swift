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

    /// Creates a fault plan; every argument defaults to "no fault".
    package init(
        dropAfterBytes: Int? = nil,
        dropCount: Int? = nil,
        errorRate: Double = 0,
        errorStatus: Int = 503,
        bytesPerSecond: Int? = nil,
        corruptOffset: Int64? = nil,
        seed: UInt64 = 0
    ) {
        self.dropAfterBytes = dropAfterBytes
        self.dropCount = dropCount
        self.errorRate = errorRate
        self.errorStatus = errorStatus
        self.bytesPerSecond = bytesPerSecond
        self.corruptOffset = corruptOffset
        self.seed = seed
    }
}
