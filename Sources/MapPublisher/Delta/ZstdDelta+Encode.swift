import Foundation
import MapDelta
import MapModel
import MapPlatform

extension ZstdDelta {
    /// The zstd level the publisher uses by default for deltas and plain payloads.
    package static let defaultLevel = 19

    /// Encodes the file `new` into one zstd frame at `output` and returns its size: a delta
    /// against `old` (memory-mapped read-only as the raw-content prefix, with the zstd CLI's
    /// `--patch-from` parameters) or, with `old` nil, a plain zstd frame. The new file is
    /// streamed in chunks. Throws ``PatchBuildError/deltaUnavailable(path:reason:)`` beyond
    /// ``ZstdDelta/maxFileSize`` or for an empty `old`. `zstd -d --patch-from=old` reads the result.
    package static func encode(new: URL, old: URL?, to output: URL, level: Int = defaultLevel) throws -> Int64 {
        let prefix = try old.map { try MappedFile.source($0.path, displayPath: $0.path) }
        if let prefix, prefix.bytes.isEmpty {
            throw PatchBuildError.deltaUnavailable(path: new.path, reason: "old file is empty")
        }
        let out = try SystemFile.createOrTruncate(output.path)
        let size = try ZstdCompressor().encode(path: new.path, prefix: prefix?.bytes, level: level, into: out)
        try out.sync()
        return size
    }
}
