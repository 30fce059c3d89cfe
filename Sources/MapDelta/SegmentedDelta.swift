import Crypto
import Foundation
import MapModel
package import MapPlatform

/// A delta cut into segments, for files of any size with bounded memory: each segment of
/// the new file is one zstd frame whose prefix is a window of the old file (where that
/// part of the new file most likely comes from), so decoding one needs a buffer of the
/// segment's size and the mapped old window, never the whole file, and the 2 GiB window
/// of a single zstd frame no longer limits the file size. Each segment carries the
/// SHA-256 of its new bytes, so an apply that was killed can resume after the last
/// finished segment without reading the finished ones again.
///
/// Payload layout (integers little-endian):
/// ```
/// u32 segment count S, u64 new file size
/// S × (u64 new length, u64 old offset, u64 old length, u64 frame length, 32 B SHA-256)
/// S zstd frames, in order
/// ```
package struct SegmentedDelta: Sendable, Equatable {
    /// One segment of the new file.
    package struct Segment: Sendable, Equatable {
        /// Bytes of the new file it produces.
        package var newLength: Int64
        /// Start of its old window (the frame's prefix).
        package var oldOffset: Int64
        /// Length of its old window (0: a plain frame).
        package var oldLength: Int64
        /// Length of its zstd frame in the payload.
        package var frameLength: Int64
        /// SHA-256 of the bytes it produces.
        package var sha256: SHA256Hash

        /// A segment with every field given.
        package init(newLength: Int64, oldOffset: Int64, oldLength: Int64, frameLength: Int64, sha256: SHA256Hash) {
            self.newLength = newLength
            self.oldOffset = oldOffset
            self.oldLength = oldLength
            self.frameLength = frameLength
            self.sha256 = sha256
        }
    }

    /// The segments, in file order.
    package var segments: [Segment]
    /// The new file's size (the sum of the segments' lengths).
    package var newSize: Int64

    /// The largest segment a reader accepts: a decoder buffers one segment.
    package static let maxSegmentLength: Int64 = 48 << 20
    /// Bytes per segment entry in the table.
    static let entrySize = 64

    /// A table of `segments`.
    package init(segments: [Segment]) {
        self.segments = segments
        newSize = segments.reduce(0) { $0 + $1.newLength }
    }

    /// The table as written before the frames.
    package var encoded: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(12 + segments.count * Self.entrySize)
        func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        put(UInt32(segments.count))
        put(UInt64(newSize))
        for segment in segments {
            put(UInt64(segment.newLength))
            put(UInt64(segment.oldOffset))
            put(UInt64(segment.oldLength))
            put(UInt64(segment.frameLength))
            bytes.append(contentsOf: segment.sha256.bytes)
        }
        return bytes
    }

    /// Reads the table at `offset` of a payload of `length` bytes and checks it against the
    /// target size, the old file's size and the payload's length. Returns the table and
    /// its length in bytes (the first frame starts there).
    package static func decode(
        from file: SystemFile, at offset: Int64, within length: Int64, targetSize: Int64,
        oldSize: Int64, displayPath: String
    ) throws -> (SegmentedDelta, Int64) {
        func corrupt(_ detail: String) -> PatchError { .corrupt(detail: "segment table of \(displayPath): \(detail)") }
        guard length >= 12 else { throw corrupt("too short") }
        var head = [UInt8](repeating: 0, count: 12)
        guard try head.withUnsafeMutableBytes({ try file.readChunk(into: $0, at: offset) }) == 12 else {
            throw PatchError.truncated(detail: "segment table of \(displayPath)")
        }
        var reader = ByteReader(head)
        let count = Int(try reader.u32())
        let newSize = try reader.length()
        guard count <= 1 << 24 else { throw corrupt("too many segments") }
        let tableLength = 12 + Int64(count) * Int64(entrySize)
        guard count >= 1, newSize == targetSize, tableLength <= length else { throw corrupt("does not fit the target") }
        var table = [UInt8](repeating: 0, count: count * entrySize)
        guard try table.withUnsafeMutableBytes({ try file.readChunk(into: $0, at: offset + 12) }) == table.count else {
            throw PatchError.truncated(detail: "segment table of \(displayPath)")
        }
        reader = ByteReader(table)
        var segments: [Segment] = []
        var frames: Int64 = 0
        for _ in 0..<count {
            let segment = Segment(
                newLength: try reader.length(), oldOffset: try reader.length(),
                oldLength: try reader.length(), frameLength: try reader.length(),
                sha256: try reader.sha256())
            guard segment.newLength > 0, segment.newLength <= maxSegmentLength, segment.frameLength > 0,
                segment.oldOffset >= 0, segment.oldLength >= 0, segment.oldOffset <= oldSize,
                segment.oldLength <= oldSize - segment.oldOffset
            else {
                throw corrupt("a segment is out of range")
            }
            guard segment.frameLength <= length - tableLength - frames else { throw corrupt("lengths do not add up") }
            frames += segment.frameLength
            segments.append(segment)
        }
        let delta = SegmentedDelta(segments: segments)
        guard delta.newSize == newSize, tableLength + frames == length else { throw corrupt("lengths do not add up") }
        return (delta, tableLength)
    }

    /// The granularity in which a file built as a clone of its old version is compared and
    /// written (aligned to the file's start): a window equal to the old file's bytes in
    /// place is left to the clone, any other is written (copy-on-write then allocates it).
    package static let cloneWindow = 16 << 10

    /// Decodes segments `first...` of the payload whose frames start at `framesOffset`,
    /// each against its window of `old`, handing every decoded chunk to `output` and
    /// calling `finished` with a segment's index once its bytes matched its SHA-256.
    /// Memory: one frame's decoder (its segment's size) and the buffers.
    package func decode(
        from file: SystemFile, framesOffset: Int64, old: UnsafeRawBufferPointer, from first: Int,
        displayPath: String, output: (UnsafeRawBufferPointer) throws -> Void,
        finished: (Int) throws -> Void
    ) throws {
        try decode(
            from: file, framesOffset: framesOffset,
            window: { UnsafeRawBufferPointer(rebasing: old[Int($0.oldOffset)..<Int($0.oldOffset + $0.oldLength)]) },
            from: first, displayPath: displayPath, output: output, finished: finished)
    }

    /// ``decode(from:framesOffset:old:from:displayPath:output:finished:)`` with each
    /// segment's window (never called for a segment without one) given by `window`,
    /// which may throw for one that does not lie in the old bytes. With `verifySegments`
    /// false the segments' digests are not checked: for a caller that checks the whole
    /// file's digest instead (a checkpoint it writes meanwhile is re-hashed before a resumed
    /// run trusts it), which saves a second SHA-256 pass over the file.
    package func decode(
        from file: SystemFile, framesOffset: Int64, window: (Segment) throws -> UnsafeRawBufferPointer, from first: Int,
        displayPath: String, verifySegments: Bool = true, output: (UnsafeRawBufferPointer) throws -> Void,
        finished: (Int) throws -> Void
    ) throws {
        var offset = framesOffset + segments[..<first].reduce(0) { $0 + $1.frameLength }
        for index in first..<segments.count {
            let segment = segments[index]
            let window = segment.oldLength == 0 ? nil : try window(segment)
            var hasher = SHA256()
            try ZstdDelta.decodeFrame(
                from: file, offset: offset, length: segment.frameLength, prefix: window,
                expectedSize: segment.newLength,
                windowCover: segment.newLength + segment.oldLength,
                displayPath: "\(displayPath) (segment \(index + 1) of \(segments.count))"
            ) {
                if verifySegments { hasher.update(bufferPointer: $0) }
                try output($0)
            }
            let found = verifySegments ? SHA256Hash(hasher.finalize()) : segment.sha256
            guard found == segment.sha256 else {
                throw PatchError.outputMismatch(
                    path: "\(displayPath) (segment \(index + 1) of \(segments.count))",
                    expectedSHA256: segment.sha256.hex, foundSHA256: found.hex,
                    expectedSize: segment.newLength, foundSize: segment.newLength)
            }
            try finished(index)
            offset += segment.frameLength
        }
    }

    /// Where the new file's segment `index` starts.
    package func newOffset(of index: Int) -> Int64 {
        segments[..<index].reduce(0) { $0 + $1.newLength }
    }

    /// A digest of the table, naming this exact cut in a resume checkpoint.
    package var identity: String { encoded.withUnsafeBytes { SHA256Hash.of($0).hex } }
}
