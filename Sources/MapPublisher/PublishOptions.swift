import Foundation
import MapLoader

/// How `Publisher` turns a release folder into a site version.
public struct PublishOptions: Sendable {
    /// The version label, e.g. `2026.11` or `v3`: letters, digits, `.`, `-`, `_`.
    public var version: String
    /// Container and compression of full archives.
    public var format: ArchiveFormat
    /// Compression level of full archives.
    public var level: Int
    /// How many previous versions each changed group gets patches from.
    public var patchDepth: Int
    /// How long the catalog stays valid; `nil` never expires.
    public var validity: TimeInterval?
    /// The signing key file (`maploader keygen`); `nil` publishes an unsigned site.
    public var keyFile: URL?

    /// Options for publishing `version`.
    public init(version: String, format: ArchiveFormat = .tarZstd, level: Int = 19, patchDepth: Int = 3,
                validity: TimeInterval? = nil, keyFile: URL? = nil) {
        self.version = version
        self.format = format
        self.level = level
        self.patchDepth = patchDepth
        self.validity = validity
        self.keyFile = keyFile
    }
}

/// What a publish wrote.
public struct PublishReport: Sendable, Encodable {
    /// The version published.
    public var version: String
    /// The catalog's new serial.
    public var serial: Int
    /// Leaf packages in the version.
    public var packages: Int
    /// Package groups in the version.
    public var groups: Int
    /// Archives written anew.
    public var newArchives: Int
    /// Groups whose unchanged archive was reused (zero new bytes).
    public var reusedArchives: Int
    /// Patches written.
    public var patches: Int
    /// Bytes of new blobs written.
    public var bytesWritten: Int64
    /// Bytes of the version's full archives in all.
    public var fullBytes: Int64
}

/// Why a release could not be published; one line saying what to fix.
public struct PublishError: Error, CustomStringConvertible {
    /// The message.
    public let description: String

    init(_ description: String) { self.description = description }
}
