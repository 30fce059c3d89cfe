import Foundation
import Synchronization

/// Caps the bytes per second of every download that shares it (one per loader, so
/// downloads running side by side share the cap): a window is paid for before it is
/// fetched, and no credit builds up while idle, so over any stretch of time from the first
/// request the network carries at most the cap's worth. A capped download asks for a
/// quarter second's worth at a time (a `Range` window) and waits for its turn first
/// (``HTTPSource``).
package final class RateLimiter: Sendable {
    /// The cap, bytes per second.
    package let bytesPerSecond: Int64
    /// Bytes of credit (0 at most: none builds up) and when it was last counted.
    private let bucket: Mutex<(tokens: Double, last: ContinuousClock.Instant)>

    /// A limiter of `bytesPerSecond` (at least 1).
    package init(bytesPerSecond: Int64, start: ContinuousClock.Instant = .now) {
        self.bytesPerSecond = max(1, bytesPerSecond)
        bucket = Mutex((0, start))
    }

    /// Reserves `bytes` about to be requested at `now`; returns how long to wait before
    /// requesting them.
    package func take(_ bytes: Int, now: ContinuousClock.Instant = .now) -> Duration {
        bucket.withLock { bucket in
            let rate = Double(bytesPerSecond)
            let elapsed = max(0, Double((now - bucket.last).components.seconds) + Double((now - bucket.last).components.attoseconds) / 1e18)
            bucket.tokens = min(0, bucket.tokens + elapsed * rate) - Double(bytes)
            bucket.last = now
            return bucket.tokens >= 0 ? .zero : .milliseconds(Int(-bucket.tokens / rate * 1000) + 1)
        }
    }
}
