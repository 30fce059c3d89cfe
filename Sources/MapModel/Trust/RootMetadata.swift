package import Foundation
import MapPlatform

/// A site's root of trust (`root/<version>.json`, signed in `root/<version>.json.sig`),
/// after The Update Framework's root role: an offline set of root keys, a threshold of
/// which must sign every root version, and the online keys that may sign catalogs.
///
/// A client that trusts root N accepts root N+1 only when a threshold of N's root keys
/// and a threshold of N+1's own root keys signed it, so rotating root keys, delegating a
/// new catalog key or revoking a leaked one is one new root version that devices walk to,
/// version by version, at their next check.
package struct RootMetadata: Sendable, Hashable, Codable {
    /// One key allowed to sign catalogs, until `expires` (`nil`: until revoked).
    package struct CatalogKey: Sendable, Hashable, Codable {
        /// The Ed25519 public key, base64.
        package var key: String
        /// After this instant catalogs signed by the key are refused.
        package var expires: Date?

        package init(key: String, expires: Date? = nil) {
            self.key = key
            self.expires = expires
        }
    }

    /// The format this MapLoader reads.
    package static let currentFormat = 1

    /// Format of this file.
    package var formatVersion: Int
    /// 1 for a site's first root, one more for each later one.
    package var version: Int
    /// After this instant the root is stale: a device that can find no newer one refuses
    /// the site (a server freezing it on an old root) until the publisher signs one.
    package var expires: Date?
    /// The root keys, base64.
    package var rootKeys: [String]
    /// How many root keys must sign a root version.
    package var threshold: Int
    /// The keys that may sign catalogs.
    package var catalogKeys: [CatalogKey]

    package init(version: Int, expires: Date?, rootKeys: [String], threshold: Int, catalogKeys: [CatalogKey]) {
        formatVersion = Self.currentFormat
        self.version = version
        self.expires = expires
        self.rootKeys = rootKeys
        self.threshold = threshold
        self.catalogKeys = catalogKeys
    }

    /// The root keys as keys.
    package var rootPublicKeys: [PublicKey] { rootKeys.compactMap(PublicKey.init(base64:)) }

    /// The catalog keys valid at `now`.
    package func catalogPublicKeys(at now: Date) -> [PublicKey] {
        catalogKeys.filter { $0.expires.map { $0 > now } ?? true }.compactMap { PublicKey(base64: $0.key) }
    }

    /// Every key this root names, root and catalog keys alike.
    package var allKeys: Set<PublicKey> {
        Set(rootPublicKeys + catalogKeys.compactMap { PublicKey(base64: $0.key) })
    }

    /// The first structural problem, or `nil`.
    package var problem: String? {
        guard formatVersion == Self.currentFormat else { return "format \(formatVersion) is not supported by this maploader" }
        guard (1...SiteLimits.serial).contains(version) else { return "version \(version) is out of range" }
        guard !rootKeys.isEmpty, rootKeys.count <= 64, rootPublicKeys.count == rootKeys.count,
            Set(rootKeys).count == rootKeys.count
        else {
            return "its root keys are missing, malformed, repeated or more than 64"
        }
        guard (1...rootKeys.count).contains(threshold) else {
            return "its threshold \(threshold) is not between 1 and its \(rootKeys.count) root key(s)"
        }
        guard catalogKeys.count <= 64, catalogKeys.allSatisfy({ PublicKey(base64: $0.key) != nil }) else {
            return "its catalog keys are malformed or more than 64"
        }
        return nil
    }

    /// The root file's name on a site.
    package static func path(_ version: Int) -> String { "root/\(version).json" }
    /// Its signature file's name.
    package static func signaturePath(_ version: Int) -> String { "root/\(version).json.sig" }
    /// The most bytes a root file or its signature file may have.
    package static let byteLimit: Int64 = 256 << 10
}

/// Why a root version is refused.
package struct RootRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// Accepting root versions: the one place that knows the rules of the chain.
package enum RootChain {
    /// The distinct `keys` that validly signed `data` among `signatures`.
    package static func signers(of data: Data, _ signatures: CatalogSignature, among keys: [PublicKey]) -> Set<PublicKey> {
        Set(keys.filter { key in signatures.isValid(for: data, trusting: [key]) })
    }

    /// Whether `next` revokes a catalog key of `previous`: a catalog that key signed may
    /// have carried a serial far ahead (a fast-forward attack), so the serial a device
    /// accepted before is forgotten, as TUF does when the timestamp key rotates.
    package static func revokesCatalogKey(_ previous: RootMetadata?, _ next: RootMetadata) -> Bool {
        guard let previous else { return false }
        return !Set(previous.catalogKeys.map(\.key)).isSubset(of: next.catalogKeys.map(\.key))
    }

    /// Checks `data` (a root file) with its `signatures` as the root that follows `trusted`:
    /// its version is the next one, and a threshold of `trusted`'s root keys and a
    /// threshold of its own root keys signed it. With nothing trusted yet, `data` must be
    /// root 1, signed by a threshold of its own root keys and naming one of `anchors` (a
    /// key the device was told to trust) among its keys.
    package static func accept(
        _ data: Data, signatures: CatalogSignature, after trusted: RootMetadata?,
        anchors: [PublicKey]
    ) throws(RootRefusal) -> RootMetadata {
        let root: RootMetadata
        do {
            root = try JSONCoding.decode(RootMetadata.self, from: data)
        } catch {
            throw RootRefusal("it is not a root file: \(error.description)")
        }
        if let problem = root.problem { throw RootRefusal(problem) }
        let expected = (trusted?.version ?? 0) + 1
        guard root.version == expected else {
            throw RootRefusal("it says it is root \(root.version) where root \(expected) was asked for")
        }
        if let trusted {
            let old = signers(of: data, signatures, among: trusted.rootPublicKeys).count
            guard old >= trusted.threshold else {
                throw RootRefusal("it is signed by \(old) of the root keys of root \(trusted.version), which needs \(trusted.threshold)")
            }
        } else {
            guard !root.allKeys.isDisjoint(with: anchors) else {
                throw RootRefusal("it names none of the publisher keys this device trusts")
            }
        }
        let own = signers(of: data, signatures, among: root.rootPublicKeys).count
        guard own >= root.threshold else {
            throw RootRefusal("it is signed by \(own) of its own root keys, and needs \(root.threshold)")
        }
        return root
    }
}
