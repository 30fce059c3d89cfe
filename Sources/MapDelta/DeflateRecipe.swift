import Foundation
import MapModel
package import MapPlatform

/// How to rebuild a file byte for byte from its expansion (the file with the deflate
/// streams that zlib reproduces inflated in place): raw runs copied as they are, and each
/// inflated segment deflated again with the parameters the publisher checked.
///
/// Encoded before the zstd frame of a see-through payload, little-endian:
/// `u32 segments, u64 tail, u64 expanded size`, then per segment
/// `u64 raw bytes before it, u64 inflated length, u8 level, u8 memLevel, u8 strategy,
/// u8 framing` (0: a raw deflate stream; 1: a PNG run of IDAT chunks, followed by
/// `u32 chunk size, 2 bytes zlib header, u16 0`; 2: a raw deflate stream made again in
/// pieces, followed by `u64 compressed length, u32 cuts` and each cut's distance from the
/// one before as `u32`: ``DeflatePieces``).
package struct DeflateRecipe: Sendable, Equatable {
    /// One re-deflated segment.
    package struct Segment: Sendable, Equatable {
        /// Raw bytes between the previous segment (or the start) and this one.
        package var rawBefore: Int64
        /// Bytes of the segment's inflated content in the expansion.
        package var expandedLength: Int64
        /// How zlib reproduces its compressed bytes.
        package var parameters: DeflateParameters
        /// For a PNG run: how the stream is framed into chunks.
        package var png: PNGRun?
        /// For a zstd frame (``EncodingParts/View/scannedZstd``): how libzstd makes it
        /// again; `parameters` is then not read.
        package var zstd: ZstdFrames.Parameters?
        /// For a large raw deflate stream: where it is cut into pieces that zlib makes again
        /// on several threads (``DeflatePieces``, one reference); nil for a stream made whole.
        package var pieces: DeflatePieces?
        /// The codec that makes the segment again.
        package var codec: EncodingParts.StreamCodec { zstd == nil ? .deflate : .zstd }

        package init(
            rawBefore: Int64, expandedLength: Int64, parameters: DeflateParameters, png: PNGRun? = nil,
            zstd: ZstdFrames.Parameters? = nil, pieces: DeflatePieces? = nil
        ) {
            self.rawBefore = rawBefore
            self.expandedLength = expandedLength
            self.parameters = parameters
            self.png = png
            self.zstd = zstd
            self.pieces = pieces
        }
    }

    /// The segments, in file order.
    package var segments: [Segment]
    /// Raw bytes after the last segment.
    package var tail: Int64
    /// Bytes of the whole expansion.
    package var expandedSize: Int64

    package init(segments: [Segment], tail: Int64) {
        self.segments = segments
        self.tail = tail
        // Saturating: a recipe read from a patch may carry any numbers; one that does not add
        // up is refused by its reader, never trapped on.
        self.expandedSize = segments.reduce(tail) { $0.plusSaturating($1.rawBefore).plusSaturating($1.expandedLength) }
    }

    static let fixedLength = 20
    static let segmentLength = 20
    /// The most segments a recipe may have: clients refuse more, and the publisher keeps a
    /// byte-level delta for a file of more deflate streams (one definition for both).
    package static let maxSegments = 1 << 20

    /// The encoded recipe.
    package var encoded: [UInt8] {
        var out: [UInt8] = []
        func put<T: FixedWidthInteger>(_ value: T) { out += withUnsafeBytes(of: value.littleEndian, Array.init) }
        put(UInt32(segments.count))
        put(UInt64(tail))
        put(UInt64(expandedSize))
        for segment in segments {
            put(UInt64(segment.rawBefore))
            put(UInt64(segment.expandedLength))
            out += [
                UInt8(segment.parameters.level), UInt8(segment.parameters.memLevel), UInt8(segment.parameters.strategy),
                segment.png != nil ? 1 : segment.pieces != nil ? 2 : 0,
            ]
            if let png = segment.png {
                put(UInt32(png.chunkSize))
                out += png.header + [0, 0]
            } else if let pieces = segment.pieces {
                put(UInt64(bitPattern: pieces.compressedLength))
                put(UInt32(pieces.cuts.count))
                var previous: Int64 = 0
                for cut in pieces.cuts {  // each as its distance from the one before (at most 16 MiB)
                    put(UInt32(truncatingIfNeeded: cut &- previous))
                    previous = cut
                }
            }
        }
        return out
    }

    /// Reads a recipe at `offset` of `file` (a payload of `length` bytes); returns it and
    /// its encoded length.
    package static func decode(from file: SystemFile, at offset: Int64, within length: Int64) throws -> (DeflateRecipe, Int64) {
        func bytes(_ count: Int, at position: Int64) throws -> [UInt8] {
            var out = [UInt8](repeating: 0, count: count)
            guard position + Int64(count) <= offset + length,
                try out.withUnsafeMutableBytes({ try file.readChunk(into: $0, at: position) }) == count
            else {
                throw PatchError.truncated(detail: "see-through payload ends inside its recipe")
            }
            return out
        }
        func integer(_ bytes: ArraySlice<UInt8>) -> Int64 {
            bytes.reversed().reduce(Int64(0)) { $0 << 8 | Int64($1) }
        }
        let fixed = try bytes(fixedLength, at: offset)
        let count = integer(fixed[0..<4])
        guard count > 0, count <= maxSegments else { throw PatchError.corrupt(detail: "see-through payload has an invalid recipe") }
        var position = offset + Int64(fixedLength)
        var segments: [Segment] = []
        for _ in 0..<Int(count) {
            let entry = try bytes(segmentLength, at: position)[...]
            position += Int64(segmentLength)
            let parameters = DeflateParameters(level: Int32(entry[16]), memLevel: Int32(entry[17]), strategy: Int32(entry[18]))
            guard (0...9).contains(parameters.level), (1...9).contains(parameters.memLevel), (0...4).contains(parameters.strategy),
                entry[19] <= 2
            else {
                throw PatchError.corrupt(detail: "see-through payload has invalid deflate parameters")
            }
            var png: PNGRun?
            if entry[19] == 1 {
                let extra = try bytes(8, at: position)[...]
                position += 8
                png = PNGRun(chunkSize: integer(extra[0..<4]), header: Array(extra[4..<6]))
                guard png!.chunkSize > 0, PNGRun.isValidHeader(png!.header) else {
                    throw PatchError.corrupt(detail: "see-through payload has an invalid PNG framing")
                }
            }
            var pieces: DeflatePieces?
            if entry[19] == 2 {
                let head = try bytes(12, at: position)[...]
                position += 12
                let expanded = integer(entry[8..<16])
                let count = integer(head[8..<12])
                // At most one cut per least piece of the content: the count is bounded before
                // anything is read for it.
                guard expanded > 0, count <= expanded / DeflatePieces.minimumPiece, count <= Int64(maxSegments),
                    count * 4 <= offset + length - position
                else {
                    throw PatchError.corrupt(detail: "see-through payload has invalid deflate pieces")
                }
                let gaps = try bytes(Int(count) * 4, at: position)
                position += count * 4
                var cut: Int64 = 0  // at most a million gaps of under 2^32: no overflow
                pieces = DeflatePieces(
                    cuts: stride(from: 0, to: gaps.count, by: 4).map {
                        cut += integer(gaps[$0..<($0 + 4)])
                        return cut
                    },
                    compressedLength: integer(head[0..<8]))
                guard pieces!.isValid(length: expanded) else {
                    throw PatchError.corrupt(detail: "see-through payload has invalid deflate pieces")
                }
            }
            segments.append(
                Segment(
                    rawBefore: integer(entry[0..<8]), expandedLength: integer(entry[8..<16]),
                    parameters: parameters, png: png, pieces: pieces))
        }
        let recipe = DeflateRecipe(segments: segments, tail: integer(fixed[4..<12]))
        guard recipe.expandedSize == integer(fixed[12..<20]), recipe.expandedSize >= 0, recipe.expandedSize < .max,
            segments.allSatisfy({ $0.rawBefore >= 0 && $0.expandedLength >= 0 }), recipe.tail >= 0
        else {
            throw PatchError.corrupt(detail: "see-through payload's recipe does not add up")
        }
        return (recipe, position - offset)
    }

    static func copy(
        _ input: SystemFile, from offset: Int64, length: Int64,
        to output: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        try input.copy(from: offset, length: length, buffer: buffer, to: output)
    }

    // MARK: - Making a recipe (publisher) and expansions (both sides)

    /// The most bytes the expansion of a file of `size` bytes may have, for the publisher
    /// (which keeps a byte-level delta for a file past it) and the client (which refuses a
    /// patch that needs more): 128 times the file, at least 64 MiB, at most 16 GiB. Map data
    /// inflates 3–10 times, a map image's pixels up to about 70; a deflate bomb (a 1 MB file
    /// of zeros that inflates to 1 GB) stops at 128 MB instead of filling the disk.
    package static func expansionLimit(ofFileOfSize size: Int64) -> Int64 {
        min(16 << 30, max(64 << 20, size.multipliedSaturating(by: 128)))
    }

    /// Writes the expansion of the file at `path` into `output`: its bytes with `streams`
    /// (in file order) inflated in place. Returns each stream's inflated length. An
    /// expansion past ``expansionLimit(ofFileOfSize:)`` stops with
    /// ``PatchError/beyondLimits(detail:)`` before its bytes past the limit are written.
    /// `codec` says what the streams are (deflate streams or zstd frames).
    package static func expand(
        _ path: String, streams: [DeflateStreams.Stream], codec: EncodingParts.StreamCodec = .deflate, into output: String
    ) throws -> [Int64] {
        let input = try SystemFile.openForReading(path)
        let size = try input.size()
        let out = try SystemFile.createOrTruncate(output)
        let limit = expansionLimit(ofFileOfSize: size)
        var total: Int64 = 0
        func write(_ chunk: UnsafeRawBufferPointer) throws {
            total += Int64(chunk.count)
            guard total <= limit else {
                throw PatchError.beyondLimits(
                    detail: "the deflate streams of a \(ByteFormat.string(size)) file expand past \(ByteFormat.string(limit)), "
                        + "the most a file of its size may")
            }
            try out.writeAll(chunk)
        }
        var position: Int64 = 0
        var lengths: [Int64] = []
        for stream in streams {
            try copy(input, from: position, length: stream.offset - position, to: write)
            var inflated: Int64 = 0
            try codec.expand(input, stream) {
                try write($0)
                inflated += Int64($0.count)
            }
            lengths.append(inflated)
            position = stream.offset + stream.length
        }
        try copy(input, from: position, length: size - position, to: write)
        return lengths
    }

    /// The first candidate that deflates `length` bytes of `expansion` at `offset` into
    /// exactly the `originalLength` bytes of `original` at `originalOffset`, compared as
    /// they are produced (a mismatch stops a candidate at once, so a stream another encoder
    /// made costs each candidate only its first block); `nil` when none does.
    package static func parameters(
        reproducing original: SystemFile, at originalOffset: Int64, length originalLength: Int64,
        from expansion: SystemFile, at offset: Int64, length: Int64,
        png: PNGRun? = nil
    ) -> DeflateParameters? {
        if let png {
            // A PNG run: the deflate stream inside its chunks is compared first, as it is
            // produced; only a candidate that matches it whole is framed and compared whole.
            guard let run = try? DeflateStreams.read(original, at: originalOffset, count: Int(originalLength)),
                let data = try? DeflateStreams.pngData(original, DeflateStreams.Stream(offset: originalOffset, length: originalLength, png: png)),
                data.count > 6
            else { return nil }
            let deflated = data[2..<(data.count - 4)]
            return DeflateParameters.candidates.first { candidate in
                var position = deflated.startIndex
                do {
                    try DeflateStreams.deflate(
                        expansion, offset: offset, length: length, parameters: candidate,
                        windowBits: png.windowBits
                    ) { produced in
                        guard position + produced.count <= deflated.endIndex,
                            deflated[position..<(position + produced.count)].elementsEqual(produced)
                        else { throw Mismatch() }
                        position += produced.count
                    }
                } catch {
                    return false
                }
                return position == deflated.endIndex
                    && (try? DeflateStreams.framePNG(expansion, offset: offset, length: length, run: png, parameters: candidate)) == run
            }
        }
        let compare = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { compare.deallocate() }
        for candidate in DeflateParameters.candidates {
            var position: Int64 = 0
            do {
                try DeflateStreams.deflate(expansion, offset: offset, length: length, parameters: candidate) { produced in
                    var done = 0
                    while done < produced.count {
                        let want = min(compare.count, produced.count - done)
                        guard position + Int64(want) <= originalLength,
                            try original.readChunk(
                                into: UnsafeMutableRawBufferPointer(rebasing: compare[0..<want]),
                                at: originalOffset + position) == want,
                            memcmp(compare.baseAddress!, produced.baseAddress! + done, want) == 0
                        else { throw Mismatch() }
                        done += want
                        position += Int64(want)
                    }
                }
                if position == originalLength { return candidate }
            } catch {
                continue
            }
        }
        return nil
    }

    /// A candidate's output differs from the original.
    private struct Mismatch: Error {}
}
