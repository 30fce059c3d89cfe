import Foundation
import MapModel
import MapPlatform

/// How long a transfer may take before it counts as failed: a server that stops sending,
/// dribbles bytes, or never answers ends in a clear error instead of a hang.
public struct TransferDeadlines: Sendable, Hashable {
    /// Seconds without a byte (no response head, or no body bytes) before the attempt is given up.
    public var stall: Double
    /// The slowest acceptable rate, bytes per second, averaged over ``rateWindow``
    /// (like curl's `--speed-limit`); 0 switches the check off.
    public var minimumRate: Int64
    /// Seconds over which ``minimumRate`` is measured (like curl's `--speed-time`).
    public var rateWindow: Double
    /// Seconds one file may take in all, retries included; `nil` for no limit.
    public var total: Double?

    /// Deadlines; the defaults give up on 30 s of silence, on less than 1 kB/s over a
    /// minute, and on any one file after 6 hours.
    public init(stall: Double = 30, minimumRate: Int64 = 1024, rateWindow: Double = 60, total: Double? = 6 * 3600) {
        self.stall = stall
        self.minimumRate = minimumRate
        self.rateWindow = rateWindow
        self.total = total
    }
}
