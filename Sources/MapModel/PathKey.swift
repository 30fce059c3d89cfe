import MapPlatform

/// A relative path compared and hashed by its UTF-8 bytes, as file systems compare names.
///
/// Swift's `String` equality is canonical equivalence, so `"café"` spelled with a composed
/// `é` (NFC) equals the one spelled `e` + combining accent (NFD), while a file system holds
/// them as two files. Every set or dictionary keyed by a file path uses this key instead.
package struct PathKey: Hashable, Comparable, Sendable {
    /// The path's bytes.
    package let bytes: [UInt8]

    /// The key of `path`.
    package init(_ path: some StringProtocol) { bytes = Array(path.utf8) }

    package static func < (lhs: PathKey, rhs: PathKey) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }
}
