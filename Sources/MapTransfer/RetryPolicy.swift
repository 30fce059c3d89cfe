import Foundation
import MapModel
import MapPlatform

/// How often and how patiently a failed request is retried: the transfer layer's copy of
/// the loader's configuration (`MapLoader.Configuration.Retry`, where the defaults and
/// the documentation of each field live).
package struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included (at least 1).
    package var attempts: Int
    /// Delay before the first retry, seconds; doubled each time.
    package var initialDelay: Double
    /// Longest delay between attempts, seconds.
    package var maxDelay: Double

    /// A policy of these values.
    package init(attempts: Int, initialDelay: Double, maxDelay: Double) {
        self.attempts = max(1, attempts)
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
    }

    /// The delay before retry number `retry` (1-based): exponential with ±50% jitter.
    package func delay(beforeRetry retry: Int) -> Double {
        let base = min(maxDelay, initialDelay * pow(2, Double(retry - 1)))
        return base * Double.random(in: 0.5...1.5)
    }
}
