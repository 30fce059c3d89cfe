import Foundation
import MapModel
import MapPlatform

/// How long a transfer may take before it counts as failed: the transfer layer's copy of
/// the loader's configuration (`MapLoader.Configuration.Deadlines`, where the defaults and
/// the documentation of each field live).
package struct TransferDeadlines: Sendable, Hashable {
    /// Seconds without a byte before the attempt is given up.
    package var stall: Double
    /// The slowest acceptable rate, bytes per second over ``rateWindow``; 0: no check.
    package var minimumRate: Int64
    /// Seconds over which ``minimumRate`` is measured.
    package var rateWindow: Double
    /// Seconds one file may take in all, retries included; `nil` for no limit.
    package var total: Double?
    /// A gap of more than this many seconds between two of the driver's calls (libcurl
    /// calls at least once a second) is time the client did not run: stopped (`SIGSTOP`,
    /// Ctrl-Z), asleep with its machine, or starved of CPU. It does not count against the
    /// server's silence or rate. `nil`: every second counts.
    package var suspension: Double?

    /// Seconds of a gap in the driver's calls that count as the client not running.
    package static let clientSuspension: Double = 5

    /// The longest any of the deadlines may be: 30 days (longer ones are taken as this).
    package static let longest: Double = 30 * 24 * 3600

    /// Deadlines of these values, each brought into range: an app's configuration may say
    /// anything (`.infinity`, `.nan`, a negative number) and no conversion to whole
    /// seconds, milliseconds or a `Duration` may trap. A total that is not finite is no
    /// limit.
    package init(stall: Double, minimumRate: Int64, rateWindow: Double, total: Double?, suspension: Double? = nil) {
        self.stall = Self.seconds(stall, otherwise: 30)
        self.minimumRate = max(0, minimumRate)
        self.rateWindow = Self.seconds(rateWindow, otherwise: 60)
        self.total = total.flatMap { $0.isFinite ? Self.seconds($0, otherwise: Self.longest) : nil }
        self.suspension = suspension.map { Self.seconds($0, otherwise: Self.clientSuspension) }
    }

    /// `value` within 0.01 s … ``longest`` (infinity is the longest; not a number is `otherwise`).
    private static func seconds(_ value: Double, otherwise: Double) -> Double {
        value.isNaN ? otherwise : min(max(value, 0.01), longest)
    }
}
