package import Foundation
import MapPlatform

/// The site's small signed timestamp (`timestamp.json`): the serial, expiry and root of the
/// current catalog, and the catalog's SHA-256 and length. A device polls this file alone
/// (a few hundred bytes, whatever the catalog's size), and fetches the catalog only when
/// the pin differs from the catalog it accepted before; a catalog it fetches is then
/// checked against the pin, so the catalog's own signature file is not needed. As TUF's
/// timestamp role, it is signed by the keys that sign catalogs.
///
/// The file is two lines: the signed fields as compact JSON, then a
/// ``CatalogSignature`` over exactly the first line's bytes.
package struct CatalogTimestamp: Sendable, Hashable, Codable {
    /// Format of this file; readers refuse formats they do not know.
    package var formatVersion: Int
    /// The serial of the catalog it pins.
    package var serial: Int
    /// The catalog's expiry.
    package var expires: Date?
    /// The root of trust whose catalog keys sign it; `nil` on a site without roots.
    package var rootVersion: Int?
    /// The catalog it pins.
    package var catalog: Pin

    /// A pin of one file: its SHA-256 and length.
    package typealias Pin = FilePin

    /// The timestamp of `catalog`, whose published bytes are `bytes`.
    package init(of catalog: Catalog, bytes: Data) {
        formatVersion = catalog.formatVersion
        serial = catalog.serial
        expires = catalog.expires
        rootVersion = catalog.rootVersion
        self.catalog = Pin(sha256: FileHashing.sha256(of: bytes), size: Int64(bytes.count))
    }

    /// Whether `bytes` are the catalog this timestamp pins, with the serial and root it
    /// names (a timestamp that disagrees with its catalog is passed over, not trusted).
    package func vouches(for bytes: Data) -> Bool {
        guard Int64(bytes.count) == catalog.size, FileHashing.sha256(of: bytes) == catalog.sha256,
            let pinned = try? JSONCoding.decode(Catalog.self, from: bytes)
        else { return false }
        return pinned.serial == serial && pinned.rootVersion == rootVersion
    }
}

/// A timestamp file as published: the signed line and its signatures.
package struct SignedTimestamp: Sendable, Hashable {
    /// The signed fields.
    package let timestamp: CatalogTimestamp
    /// The exact bytes the signatures cover (the file's first line).
    package let signed: Data
    /// The signatures over ``signed``.
    package let signature: CatalogSignature
    /// The whole file as published.
    package let file: Data

    /// The largest timestamp file accepted (nothing pins its length).
    package static let limit: Int64 = 16 << 10

    /// Reads a timestamp file, or says in a few words what is wrong with it.
    package static func parse(_ file: Data) throws(MapLoaderError) -> SignedTimestamp {
        guard let newline = file.firstIndex(of: UInt8(ascii: "\n")) else {
            throw .invalidMetadata(what: SiteLayout.timestamp, detail: "it is not two lines (signed fields, then signatures)")
        }
        let signed = Data(file[file.startIndex..<newline])
        let rest = Data(file[(newline + 1)...])
        let timestamp: CatalogTimestamp
        let signature: CatalogSignature
        do {
            timestamp = try JSONCoding.decode(CatalogTimestamp.self, from: signed)
            signature = try JSONCoding.decode(CatalogSignature.self, from: rest)
        } catch {
            throw .invalidMetadata(what: SiteLayout.timestamp, detail: error.description)
        }
        guard timestamp.formatVersion == Manifest.currentFormat else {
            throw .invalidMetadata(
                what: SiteLayout.timestamp, detail: "format \(timestamp.formatVersion) is not supported by this maploader; upgrade it")
        }
        guard (0...SiteLimits.serial).contains(timestamp.serial), timestamp.catalog.isWellFormed(sizes: 1...Catalog.sizeLimit)
        else {
            throw .invalidMetadata(
                what: SiteLayout.timestamp,
                detail: "serial \(timestamp.serial), catalog of \(timestamp.catalog.size) bytes or its hash is out of range")
        }
        return SignedTimestamp(timestamp: timestamp, signed: signed, signature: signature, file: file)
    }

    /// The file that signs `timestamp` with `sign` (a signing key's detached signature).
    package static func file(of timestamp: CatalogTimestamp, signedBy sign: (Data) throws -> CatalogSignature) throws -> Data {
        let signed = try timestamp.jsonData(pretty: false)
        return signed + Data("\n".utf8) + (try sign(signed).jsonData(pretty: false)) + Data("\n".utf8)
    }

    /// Whether one of `keys` signed it.
    package func isSigned(trusting keys: [PublicKey]) -> Bool { signature.isValid(for: signed, trusting: keys) }
}
