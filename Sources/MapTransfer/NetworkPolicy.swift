package import MapPlatform

/// Which networks may carry downloads: the transfer layer's copy of the loader's
/// configuration (`MapLoader.Configuration.NetworkPolicy`, where the documentation lives).
package struct NetworkPolicy: Sendable, Hashable {
    /// Cellular networks and personal hotspots (networks the system calls expensive).
    package var allowsExpensive: Bool
    /// Networks in Low Data Mode.
    package var allowsConstrained: Bool

    /// A policy of these values.
    package init(allowsExpensive: Bool = true, allowsConstrained: Bool = true) {
        self.allowsExpensive = allowsExpensive
        self.allowsConstrained = allowsConstrained
    }

    /// Every network.
    package static let any = NetworkPolicy()

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
