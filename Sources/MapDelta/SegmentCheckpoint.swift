import Foundation
import MapPlatform

/// How far a segmented output got, saved beside it after each finished segment.
package struct SegmentCheckpoint: Codable, Equatable {
    /// The segment table's identity (``SegmentedDelta/identity``).
    package var identity: String
    /// The old file's expected SHA-256 (hex).
    package var source: String
    /// Segments finished and fsync'ed.
    package var segments: Int
    /// For a see-through file whose expansion is finished: how far its rebuild got.
    package var rebuilt: DeflateRecipe.Position?
    /// The SHA-256 (hex) of the bytes rebuilt before ``rebuilt``.
    package var rebuiltSHA256: String?
    /// For a file decoded in one stream (a suffix delta): the bytes written and fsync'ed.
    package var bytes: Int64?
    /// For a see-through file whose expansion was decoded whole (not in segments): the
    /// finished expansion's SHA-256 (hex), checked before a resumed run takes it over.
    package var expansionSHA256: String?

    /// A checkpoint with every field given.
    package init(identity: String, source: String, segments: Int) {
        self.identity = identity
        self.source = source
        self.segments = segments
    }

    /// The checkpoint at `path`, if one is there and readable.
    package static func read(_ path: String) -> SegmentCheckpoint? {
        guard let data = FileSystem.contents(path) else { return nil }
        return try? JSONDecoder().decode(SegmentCheckpoint.self, from: data)
    }

    /// Writes the checkpoint by rename, so a reader sees the old or the new one whole.
    package func write(_ path: String) throws {
        let temporary = path + ".tmp"
        try FileSystem.write(try JSONEncoder().encode(self), to: URL(fileURLWithPath: temporary))
        try FileSystem.rename(temporary, path)
    }
}
