import Foundation
import Synchronization

/// Caps the bytes per second of every download that shares it (one per loader, so
/// downloads running side by side share the cap): a window is paid for before it is
/// requested (the first one too), and no more than one window's credit builds up while
/// idle, so the network carries the cap's worth over time and at most one window (a
/// quarter second's worth, as a capped download asks for, in `Range` windows:
/// ``HTTPSource``) ahead of it at any moment.
package final class RateLimiter: Sendable {
    /// The cap, bytes per second.
    package let bytesPerSecond: Int64
    /// When the windows reserved so far are paid for: the next window may be requested once
    /// its own bytes are paid on top of that (time spent fetching counts, idle time does not).
    private let due: Mutex<ContinuousClock.Instant>

    /// A limiter of `bytesPerSecond` (at least 1).
    package init(bytesPerSecond: Int64, start: ContinuousClock.Instant = .now) {
        self.bytesPerSecond = max(1, bytesPerSecond)
        due = Mutex(start)
    }

    /// Reserves `bytes` about to be requested at `now`; returns how long to wait before
    /// requesting them.
    package func take(_ bytes: Int, now: ContinuousClock.Instant = .now) -> Duration {
        due.withLock { due in
            // Time since the last window was due counts as its fetch, up to this window's own
            // length: a download keeps the cap's pace, and after a pause one window may go at once.
            let length = Duration.seconds(Double(bytes) / Double(bytesPerSecond))
            due = max(due, now - length) + length
            let wait = due - now
            return wait <= .zero ? .zero : .milliseconds(Int((wait / .milliseconds(1)).rounded(.up)))
        }
    }
}
