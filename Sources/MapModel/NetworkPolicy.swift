package import MapPlatform

/// Which networks may carry downloads: on a phone, updates on Wi-Fi only; on a head
/// unit, nothing over its cellular modem.
///
/// On Apple platforms URLSession keeps requests off the networks left out
/// (`allowsExpensiveNetworkAccess`, `allowsConstrainedNetworkAccess`), personal hotspots
/// included. On Linux the loader checks before each request (libcurl fetches a file in one
/// request, URLSession in 8 MiB windows) whether the IPv4 default route goes through a
/// cellular modem (the kernel's `DEVTYPE=wwan`, or an interface named `wwan…`, `rmnet…`,
/// `ccmni…` or `ppp…`); Low Data Mode has no equivalent there, and where nothing tells
/// (no IPv4 default route; Android 10 and later, which hides `/proc/net` from apps) every
/// network is allowed: an Android app checks `ConnectivityManager` itself before it
/// starts an update. A refused download fails with
/// ``MapLoaderError/networkNotAllowed(reason:)`` and keeps what it fetched, so the same
/// call on Wi-Fi continues where it stopped.
public struct NetworkPolicy: Sendable, Hashable {
    /// Whether expensive networks may carry downloads: cellular, and on Apple platforms personal hotspots.
    public var allowsExpensive: Bool
    /// Whether networks in Low Data Mode (constrained networks) may carry downloads.
    public var allowsConstrained: Bool

    /// A policy; the defaults allow every network.
    public init(allowsExpensive: Bool = true, allowsConstrained: Bool = true) {
        self.allowsExpensive = allowsExpensive
        self.allowsConstrained = allowsConstrained
    }

    /// Every network: the default.
    public static let any = NetworkPolicy()
    /// Neither expensive nor constrained networks: Wi-Fi and wired networks outside Low
    /// Data Mode. For updates the user did not ask for just now.
    public static let unmetered = NetworkPolicy(allowsExpensive: false, allowsConstrained: false)

    /// Why `conditions` may not carry downloads, or `nil` when they may (or are unknown:
    /// the transport then enforces the policy, as URLSession does on Apple platforms).
    package func refusal(_ conditions: NetworkConditions?) -> String? {
        guard let conditions else { return nil }
        if conditions.expensive && !allowsExpensive {
            return "the default route goes through \(conditions.interface), a cellular (metered) network"
        }
        if conditions.constrained && !allowsConstrained {
            return "\(conditions.interface) is in a low-data mode"
        }
        return nil
    }
}
