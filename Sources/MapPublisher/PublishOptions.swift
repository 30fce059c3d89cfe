import Foundation
import MapDelta
import MapModel
import MapPlatform

/// How `Publisher` turns a release folder into a site version.
package struct PublishOptions: Sendable {
    /// The version label, e.g. `2026.11` or `v3`: letters, digits, `.`, `-`, `_`.
    package var version: String
    /// Container and compression of full archives.
    package var format: ArchiveFormat
    /// Compression level of full archives.
    package var level: Int
    /// How many previous versions each changed group gets patches from.
    package var patchDepth: Int
    /// How long the catalog stays valid; `nil` never expires.
    package var validity: TimeInterval?
    /// The signing key file (`maploader keygen`); `nil` publishes an unsigned site.
    package var keyFile: URL?
    /// Allow signing a site that is signed with another key (clients trusting the old key
    /// refuse it until they trust the new one).
    package var rekey: Bool
    /// Allow publishing a signed site without a key (clients that trusted it refuse it).
    package var unsigned: Bool
    /// The publication time written into the catalog; `nil`: now. Fixing it (the CLI
    /// reads `SOURCE_DATE_EPOCH`) makes two publishes of the same releases byte-identical.
    package var published: Date?
    /// A tree with more leaves than this is published as a small index plus parts of at
    /// most this many leaves each (0: always one manifest file). A client then fetches,
    /// per update, the index and the parts holding its installed packages.
    package var manifestPartLeaves: Int = 256
    /// Patches cut files larger than twice this into segments of this size: the most
    /// memory (besides the mapped old file) a client needs to apply them, whatever the
    /// file's size. `nil`: 32 MiB.
    package var segmentLength: Int64?
    /// The zstd level of patches (1–22): the publisher's time budget. 19 (the default) makes
    /// the smallest patches for the time on map data; lower levels encode several times
    /// faster for somewhat larger patches.
    package var patchLevel: Int = 19
    /// Whether patches may carry LZMA2 payloads (smaller on small files), which a client
    /// built without liblzma cannot apply: it plans the full archive or another chain for
    /// such a patch instead. `false` publishes patches every client build applies.
    package var lzma = PatchCodecs.available.contains(PatchCodecs.lzma)
    /// Whether patches may see through zstd frames in files of no known container (a
    /// PMTiles archive of zstd tiles: ``PatchOptions/zstdFrames``), which only a client that
    /// links this build's zstd version applies: one of another version plans the full
    /// archive or another chain instead. Off by default.
    package var zstdFrames = false
    /// Publish files that have hard links outside the release folder (a release made with
    /// `cp -al` or `rsync --link-dest` from an earlier one). Off: such a file is refused,
    /// so a release folder never leaks the publisher's other files.
    package var allowHardLinks = false
    /// Where tasks unpack old trees and build patches (a see-through file's expansions
    /// among them, each at most ``DeflateRecipe/expansionLimit(ofFileOfSize:)``); `nil`: a
    /// folder of its own in ``defaultScratch``, removed at the end. Never the site: a site
    /// folder is what gets synced to a host, and its disk may be small.
    package var scratch: URL?

    /// `$TMPDIR`, else `/var/tmp`: a disk, where `/tmp` is often memory (tmpfs) and an old
    /// version of a country is gigabytes.
    package static var defaultScratch: URL {
        let variable = ProcessInfo.processInfo.environment["TMPDIR"] ?? ""
        return URL(fileURLWithPath: variable.isEmpty ? "/var/tmp" : variable)
    }

    /// Options for publishing `version`.
    package init(
        version: String, format: ArchiveFormat = .tarZstd, level: Int = 19, patchDepth: Int = 3,
        validity: TimeInterval? = nil, keyFile: URL? = nil, rekey: Bool = false, unsigned: Bool = false
    ) {
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
            throw PublishError(
                "level \(level) is out of range: \(format.rawValue) takes \(Self.levels(of: format).lowerBound)–\(Self.levels(of: format).upperBound)"
            )
        }
        guard (0...16).contains(patchDepth) else { throw PublishError("patch depth \(patchDepth) is out of range: use 0–16") }
        guard (1...22).contains(patchLevel) else { throw PublishError("patch level \(patchLevel) is out of range: use 1–22") }
        if let validity, !(validity > 0 && validity.isFinite) {
            throw PublishError("validity must be a positive number of seconds (or none)")
        }
    }
}

/// What a publish wrote.
package struct PublishReport: Sendable, Encodable {
    /// The version published.
    package var version: String
    /// The catalog's new serial.
    package var serial: Int
    /// Leaf packages in the version.
    package var packages: Int
    /// Package groups in the version.
    package var groups: Int
    /// Archives written anew.
    package var newArchives: Int
    /// Groups whose unchanged archive was reused (zero new bytes).
    package var reusedArchives: Int
    /// Patches written.
    package var patches: Int
    /// Bytes of new blobs written.
    package var bytesWritten: Int64
    /// Bytes of the version's full archives in all.
    package var fullBytes: Int64
    /// Wall seconds the new archives took (a local publish; `nil` from `shard assemble`).
    package var archiveSeconds: Double?
    /// Wall seconds the patches took, on all jobs (a local publish; `nil` from `shard assemble`).
    package var patchSeconds: Double?
}

/// Why a release could not be published; one line saying what to fix.
package struct PublishError: Error, CustomStringConvertible {
    /// The message.
    package let description: String

    package init(_ description: String) { self.description = description }
}
