import MapPlatform

/// Which catalogs a client accepts.
public struct TrustPolicy: Sendable, Hashable {
    /// Publisher keys whose signature makes a catalog acceptable.
    public var keys: [TrustPolicy.Key]
    /// Accept catalogs without a signature (only for sites you control). It applies only
    /// while no key is trusted: a data directory that trusts a publisher key refuses an
    /// unsigned catalog whatever this says, so a signed site cannot be downgraded.
    public var allowUnsigned: Bool
    /// Save keys the data directory does not trust yet beside those it trusts (a
    /// publisher's second key, or the new key of a rotation). Off by default: while a data
    /// directory trusts some key, a configuration naming another one is refused, so trust
    /// is never widened by accident.
    public var addKeys: Bool

    /// A policy trusting `keys`; `allowUnsigned` and `addKeys` must be asked for explicitly.
    public init(keys: [TrustPolicy.Key] = [], allowUnsigned: Bool = false, addKeys: Bool = false) {
        self.keys = keys
        self.allowUnsigned = allowUnsigned
        self.addKeys = addKeys
    }
}
