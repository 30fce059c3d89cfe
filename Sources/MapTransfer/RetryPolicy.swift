import Foundation
import MapModel
import MapPlatform

/// How often and how patiently a failed request is retried.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included.
    public var attempts: Int
    /// Delay before the first retry, seconds; doubled each time.
    public var initialDelay: Double
    /// Longest delay between attempts, seconds.
    public var maxDelay: Double

    /// A policy; the defaults try 6 times over about 6 seconds.
    public init(attempts: Int = 6, initialDelay: Double = 0.2, maxDelay: Double = 5) {
        self.attempts = max(1, attempts)
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
    }

    /// The delay before retry number `retry` (1-based): exponential with ±50% jitter.
    public func delay(beforeRetry retry: Int) -> Double {
        let base = min(maxDelay, initialDelay * pow(2, Double(retry - 1)))
        return base * Double.random(in: 0.5...1.5)
    }
}
