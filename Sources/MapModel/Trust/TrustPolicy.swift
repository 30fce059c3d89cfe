import MapPlatform
/// Which catalogs a client accepts.
public struct TrustPolicy: Sendable, Hashable {
    /// Publisher keys whose signature makes a catalog acceptable.
    public var keys: [PublicKey]
    /// Accept catalogs without a signature (only for sites you control). It applies only
    /// while no key is trusted: a data directory that trusts a publisher key refuses an
    /// unsigned catalog whatever this says, so a signed site cannot be downgraded.
    public var allowUnsigned: Bool

    /// A policy trusting `keys`; `allowUnsigned` must be asked for explicitly.
    public init(keys: [PublicKey] = [], allowUnsigned: Bool = false) {
        self.keys = keys
        self.allowUnsigned = allowUnsigned
    }
}
