/// Which catalogs a client accepts.
public struct TrustPolicy: Sendable, Hashable {
    /// Publisher keys whose signature makes a catalog acceptable.
    public var keys: [PublicKey]
    /// Accept catalogs without a valid signature (only for sites you control).
    public var allowUnsigned: Bool

    /// A policy trusting `keys`; `allowUnsigned` must be asked for explicitly.
    public init(keys: [PublicKey] = [], allowUnsigned: Bool = false) {
        self.keys = keys
        self.allowUnsigned = allowUnsigned
    }
}
