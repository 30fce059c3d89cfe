import Foundation
import Synchronization

/// Caps the bytes per second of every download that shares it (one per loader, so
/// downloads running side by side share the cap): a token bucket with one second of burst.
/// A capped download asks for a quarter second's worth at a time (a `Range` window) and
/// pauses between windows while it is ahead of the rate (``HTTPSource``).
package final class RateLimiter: Sendable {
    /// The cap, bytes per second.
    package let bytesPerSecond: Int64
    private let bucket: Mutex<(tokens: Double, last: ContinuousClock.Instant)>

    /// A limiter of `bytesPerSecond` (at least 1).
    package init(bytesPerSecond: Int64, start: ContinuousClock.Instant = .now) {
        self.bytesPerSecond = max(1, bytesPerSecond)
        bucket = Mutex((Double(max(1, bytesPerSecond)), start))
    }

    /// Takes `bytes` that arrive at `now`; returns how long to pause before reading more.
    package func take(_ bytes: Int, now: ContinuousClock.Instant = .now) -> Duration {
        bucket.withLock { bucket in
            let rate = Double(bytesPerSecond)
            let elapsed = max(0, Double((now - bucket.last).components.seconds) + Double((now - bucket.last).components.attoseconds) / 1e18)
            bucket.tokens = min(rate, bucket.tokens + elapsed * rate) - Double(bytes)
            bucket.last = now
            return bucket.tokens >= 0 ? .zero : .milliseconds(Int(-bucket.tokens / rate * 1000) + 1)
        }
    }
}
