/// SplitMix64: a tiny, fast PRNG whose whole sequence is fixed by its seed.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform value in `0..<1` built from the top 53 bits.
    mutating func nextUnitInterval() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }
}

/// The per-server bookkeeping behind a `FaultPlan`: the PRNG and how many drops are used up.
struct FaultState: Sendable {
    let plan: FaultPlan
    private var random: SplitMix64
    private var dropsUsed = 0

    init(plan: FaultPlan) {
        self.plan = plan
        random = SplitMix64(seed: plan.seed)
    }

    /// Whether the next eligible request gets `plan.errorStatus`; draws from the PRNG only
    /// when the error rate is strictly between 0 and 1, so those two extremes stay exact.
    mutating func shouldInjectError() -> Bool {
        if plan.errorRate <= 0 { return false }
        if plan.errorRate >= 1 { return true }
        return random.nextUnitInterval() < plan.errorRate
    }

    /// The number of body bytes to send before dropping the connection, or `nil` to send
    /// all `bodyLength` bytes. Uses up one of `plan.dropCount` only when it truncates.
    mutating func dropLimit(bodyLength: Int64) -> Int64? {
        guard let after = plan.dropAfterBytes else { return nil }
        let limit = Int64(max(0, after))
        guard limit < bodyLength else { return nil }
        if let count = plan.dropCount {
            guard dropsUsed < count else { return nil }
            dropsUsed += 1
        }
        return limit
    }
}

/// What to do with one eligible GET response.
enum FaultDecision: Equatable {
    /// Answer with this status instead of the file.
    case injectError(Int)
    /// Send the file; stop after this many body bytes if not `nil`.
    case send(dropAfter: Int64?)
}
