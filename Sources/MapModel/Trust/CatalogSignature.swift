package import Crypto
package import Foundation
import MapPlatform

/// The detached signature file next to the catalog (`catalog.json.sig`): one or more
/// Ed25519 signatures over the catalog's exact bytes, each naming its key.
package struct CatalogSignature: Sendable, Hashable, Codable {
    /// One signature.
    package struct Entry: Sendable, Hashable, Codable {
        /// ``PublicKey/id`` of the signing key.
        package var keyid: String
        /// The 64-byte Ed25519 signature, base64.
        package var sig: String
    }

    /// The signatures; any one by a trusted key suffices (a root needs a threshold).
    package var signatures: [Entry]

    /// A signature file of `signatures`.
    package init(signatures: [Entry]) { self.signatures = signatures }

    /// Signs `catalog` bytes with `key`.
    package static func sign(_ catalog: Data, with key: Curve25519.Signing.PrivateKey) throws -> CatalogSignature {
        let signature = try key.signature(for: catalog)
        return CatalogSignature(signatures: [Entry(keyid: PublicKey(key.publicKey).id, sig: signature.base64EncodedString())])
    }

    /// Whether a signature by one of `keys` over `catalog` is valid.
    package func isValid(for catalog: Data, trusting keys: [PublicKey]) -> Bool {
        signatures.contains { entry in
            guard let signature = Data(base64Encoded: entry.sig) else { return false }
            return keys.contains { key in
                guard key.id == entry.keyid, let verifier = try? Curve25519.Signing.PublicKey(rawRepresentation: key.raw) else {
                    return false
                }
                return verifier.isValidSignature(signature, for: catalog)
            }
        }
    }
}

extension TrustPolicy {
    /// A publisher's Ed25519 public key, written as base64 of its 32 raw bytes.
    public struct Key: Sendable, Hashable {
        /// The 32 raw key bytes (kept raw: swift-crypto's key type is not `Sendable`).
        package let raw: Data

        /// The key from its base64 text; `nil` when malformed.
        public init?(base64: String) {
            guard let raw = Data(base64Encoded: base64.trimmingCharacters(in: .whitespacesAndNewlines)),
                (try? Curve25519.Signing.PublicKey(rawRepresentation: raw)) != nil
            else { return nil }
            self.raw = raw
        }

        package init(_ key: Curve25519.Signing.PublicKey) { raw = key.rawRepresentation }

        /// Base64 of the raw key.
        public var base64: String { raw.base64EncodedString() }

        /// A short stable id: the first 16 hex digits of the raw key's SHA-256.
        public var id: String { String(FileHashing.sha256(of: raw).prefix(16)) }
    }
}

/// The name the package uses for ``TrustPolicy/Key``.
package typealias PublicKey = TrustPolicy.Key

/// A publisher's private signing key file: base64 of the 32 raw bytes, mode 0600.
package enum SigningKeyFile {
    /// Makes a new key, writes it to `url` (refusing to overwrite), and returns its public key.
    package static func generate(at url: URL) throws -> PublicKey {
        let key = Curve25519.Signing.PrivateKey()
        guard FileStatus.of(url.path) == nil else {
            throw MapLoaderError.invalidParameters("\(url.path) exists; keygen never overwrites a key")
        }
        do {
            try FileSystem.writePrivate(Data((key.rawRepresentation.base64EncodedString() + "\n").utf8), to: url.path)
        } catch {
            throw MapLoaderError.storageFailed(path: url.path, reason: "cannot create the key file (\(error))")
        }
        return PublicKey(key.publicKey)
    }

    /// The detached signature of `data` by the key in `url`.
    package static func sign(_ data: Data, keyFile url: URL) throws -> CatalogSignature {
        try CatalogSignature.sign(data, with: read(url))
    }

    /// The public half of the key in `url`.
    package static func publicKey(of url: URL) throws -> PublicKey {
        PublicKey(try read(url).publicKey)
    }

    package static func read(_ url: URL) throws -> Curve25519.Signing.PrivateKey {
        guard let text = try? String(contentsOf: url, encoding: .utf8),
            let raw = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)),
            let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: raw)
        else {
            throw MapLoaderError.invalidParameters(
                "\(url.path) is not a MapLoader signing key (the keygen command or SigningKeyFile.generate makes one)")
        }
        return key
    }
}
