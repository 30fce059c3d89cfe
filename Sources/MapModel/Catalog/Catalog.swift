package import Foundation
import MapPlatform

/// The site's entry point (`catalog.json`): which versions exist and which is current.
///
/// It pins each version's manifest by hash and length, so nothing reached from here can
/// be swapped or grown without the catalog changing too.
package struct Catalog: Sendable, Hashable, Codable {
    /// Format of this file; readers refuse formats they do not know.
    package var formatVersion: Int
    /// Raised on every publish; a client refuses a catalog older than one it accepted.
    package var serial: Int
    /// The newest version label.
    package var current: String
    /// After this instant the catalog is stale and refused; `nil` never expires.
    package var expires: Date?
    /// Retained versions, oldest first.
    package var versions: [Entry]
    /// The root of trust (``RootMetadata``) whose catalog keys sign this catalog; `nil` on
    /// a site signed by a single key without roots.
    package var rootVersion: Int?

    /// A catalog.
    package init(
        serial: Int, current: String, expires: Date? = nil, versions: [Entry],
        formatVersion: Int = Manifest.currentFormat
    ) {
        self.formatVersion = formatVersion
        self.serial = serial
        self.current = current
        self.expires = expires
        self.versions = versions
    }

    /// One retained version and its pinned manifest.
    package struct Entry: Sendable, Hashable, Codable {
        /// The version label.
        package var version: String
        /// When it was published.
        package var published: Date
        /// Site-relative path of its manifest.
        package var manifest: String
        /// SHA-256 of the manifest file.
        package var sha256: String
        /// Length of the manifest file in bytes.
        package var size: Int64
        /// The manifest's JSON once unpacked (`nil` on sites published before it was
        /// pinned): what a device keeps in its cache, what a manifest delta rebuilds, and
        /// what a site made by `maploader export` may carry in place of the packed file.
        package var unpacked: FilePin?

        /// A catalog entry.
        package init(version: String, published: Date, manifest: String, sha256: String, size: Int64, unpacked: FilePin? = nil) {
            self.version = version
            self.published = published
            self.manifest = manifest
            self.sha256 = sha256
            self.size = size
            self.unpacked = unpacked
        }

        /// The files the manifest path may hold: the packed file, or its unpacked JSON.
        package var pins: [FilePin] { [FilePin(sha256: sha256, size: size)] + (unpacked.map { [$0] } ?? []) }

        /// The name of the manifest in a device's cache: its unpacked JSON's hash where
        /// the catalog pins it, else the packed file's.
        package var cacheKey: String { unpacked?.sha256 ?? sha256 }
    }

    /// The largest catalog accepted (nothing but a timestamp pins its length).
    package static let sizeLimit: Int64 = 4 << 20

    /// The entry for `version`, if the site still has it.
    package func entry(_ version: String) -> Entry? { versions.first { $0.version == version } }
}
