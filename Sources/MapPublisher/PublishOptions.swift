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
    /// Allow signing a site that is signed with another key (clients trusting the old key
    /// refuse it until they trust the new one).
    public var rekey: Bool
    /// Allow publishing a signed site without a key (clients that trusted it refuse it).
    public var unsigned: Bool

    /// Options for publishing `version`.
    public init(version: String, format: ArchiveFormat = .tarZstd, level: Int = 19, patchDepth: Int = 3,
                validity: TimeInterval? = nil, keyFile: URL? = nil, rekey: Bool = false, unsigned: Bool = false) {
        self.rekey = rekey
        self.unsigned = unsigned
        self.version = version
        self.format = format
        self.level = level
        self.patchDepth = patchDepth
        self.validity = validity
        self.keyFile = keyFile
    }
}

extension PublishOptions {
    /// The levels each archive format takes.
    static func levels(of format: ArchiveFormat) -> ClosedRange<Int> { format == .tarGzip ? 1...9 : 1...19 }

    /// Refuses options out of range, with one line saying which and what is allowed.
    func validate() throws {
        guard Self.levels(of: format).contains(level) else {
            throw PublishError("level \(level) is out of range: \(format.rawValue) takes \(Self.levels(of: format).lowerBound)–\(Self.levels(of: format).upperBound)")
        }
        guard (0...16).contains(patchDepth) else { throw PublishError("patch depth \(patchDepth) is out of range: use 0–16") }
        if let validity, !(validity > 0 && validity.isFinite) {
            throw PublishError("validity must be a positive number of seconds (or none)")
        }
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
