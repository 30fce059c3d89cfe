import Foundation
import MapPlatform

/// The site's entry point (`catalog.json`): which versions exist and which is current.
///
/// It pins each version's manifest by hash and length, so nothing reached from here can
/// be swapped or grown without the catalog changing too.
package struct Catalog: Sendable, Hashable, Codable {
    /// Format of this file; readers refuse formats they do not know.
    public var formatVersion: Int
    /// Raised on every publish; a client refuses a catalog older than one it accepted.
    public var serial: Int
    /// The newest version label.
    public var current: String
    /// After this instant the catalog is stale and refused; `nil` never expires.
    public var expires: Date?
    /// Retained versions, oldest first.
    public var versions: [Entry]
    /// The root of trust (``RootMetadata``) whose catalog keys sign this catalog; `nil` on
    /// a site signed by a single key without roots.
    public var rootVersion: Int?

    /// A catalog.
    public init(
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
    public struct Entry: Sendable, Hashable, Codable {
        /// The version label.
        public var version: String
        /// When it was published.
        public var published: Date
        /// Site-relative path of its manifest.
        public var manifest: String
        /// SHA-256 of the manifest file.
        public var sha256: String
        /// Length of the manifest file in bytes.
        public var size: Int64

        /// A catalog entry.
        public init(version: String, published: Date, manifest: String, sha256: String, size: Int64) {
            self.version = version
            self.published = published
            self.manifest = manifest
            self.sha256 = sha256
            self.size = size
        }
    }

    /// The entry for `version`, if the site still has it.
    public func entry(_ version: String) -> Entry? { versions.first { $0.version == version } }
}
