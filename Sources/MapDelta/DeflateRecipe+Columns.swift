import Foundation
import MapModel
package import MapPlatform

/// A recipe of many streams (a tile archive holds thousands) written column by column and
/// compressed against the old file's layout, which the client computes itself: unchanged
/// tiles cost next to nothing, where 20 bytes a stream once cost more than the changed
/// tiles' content.
///
/// A ``PatchEncoding/scannedDeflateDelta`` payload starts with `u32 frame length, u32
/// columns length` and one zstd frame of the columns with ``layout(of:lengths:)`` of the
/// old file as prefix; the frame of the new expansion follows. The columns, little-endian:
/// `u32 segments, u64 tail, u64 expanded size, u8 parameter sets`, each set `u8 level, u8
/// memLevel, u8 strategy`; then every segment's `u64 raw bytes before it`, then every
/// segment's `u64 inflated length`, then every segment's `u8 parameter set`.
extension DeflateRecipe {
    /// The most bytes the columns of one recipe may take.
    static let maxColumnsLength = 64 << 20

    /// The layout of a file with `streams` (inflated to `lengths`) as the columns spell
    /// it: the raw bytes before each stream, then each stream's inflated length.
    package static func layout(of streams: [DeflateStreams.Stream], lengths: [Int64]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(streams.count * 16)
        var end: Int64 = 0
        for stream in streams {
            out += withUnsafeBytes(of: UInt64(stream.offset - end).littleEndian, Array.init)
            end = stream.offset + stream.length
        }
        for length in lengths { out += withUnsafeBytes(of: UInt64(length).littleEndian, Array.init) }
        return out
    }

    /// The recipe as columns (raw deflate streams only: no PNG framing), after its streams'
    /// codec's head (``EncodingParts/StreamCodec/columnsHead``: for zstd frames, the
    /// libzstd version that makes them again), its parameter sets that codec's.
    package var columns: [UInt8] {
        let codec = segments.first?.codec ?? .deflate
        var out = codec.columnsHead
        func put<T: FixedWidthInteger>(_ value: T) { out += withUnsafeBytes(of: value.littleEndian, Array.init) }
        let sets = Array(Set(segments.map(codec.parameterSet(of:)))).sorted { $0.lexicographicallyPrecedes($1) }
        let choices = Dictionary(uniqueKeysWithValues: sets.enumerated().map { ($1, UInt8($0)) })
        put(UInt32(segments.count))
        put(UInt64(tail))
        put(UInt64(expandedSize))
        out.append(UInt8(sets.count))
        for set in sets { out += set }
        for segment in segments { put(UInt64(segment.rawBefore)) }
        for segment in segments { put(UInt64(segment.expandedLength)) }
        for segment in segments { out.append(choices[codec.parameterSet(of: segment)]!) }
        return out
    }

    /// The recipe its ``columns`` spell, of streams of `codec`; refuses anything malformed,
    /// and zstd frames made again by another libzstd than this build's.
    package init(columns bytes: [UInt8], codec: EncodingParts.StreamCodec = .deflate) throws {
        func fail() -> PatchError { .corrupt(detail: "see-through payload has an invalid recipe") }
        let headLength = try codec.checkColumnsHead(bytes)
        var index = headLength
        func integer(_ width: Int) throws -> Int64 {
            guard index + width <= bytes.count else { throw fail() }
            defer { index += width }
            let value = bytes[index..<(index + width)].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            guard value <= UInt64(Int64.max) else { throw fail() }
            return Int64(value)
        }
        let count = Int(try integer(4))
        let tail = try integer(8)
        let expanded = try integer(8)
        let setCount = Int(try integer(1))
        guard count > 0, count <= Self.maxSegments, setCount > 0, bytes.count == headLength + 21 + setCount * 3 + count * 17
        else { throw fail() }
        var sets: [Segment] = []
        for _ in 0..<setCount {
            var set = Segment(rawBefore: 0, expandedLength: 0, parameters: DeflateParameters(level: 0, memLevel: 1, strategy: 0))
            guard codec.apply(set: bytes[index..<(index + 3)], to: &set) else { throw fail() }
            sets.append(set)
            index += 3
        }
        // The three columns are read in place into the segments (no column copies: a recipe
        // of a million streams costs its segments and the column bytes, nothing more).
        var segments: [Segment] = []
        segments.reserveCapacity(count)
        for _ in 0..<count { segments.append(Segment(rawBefore: try integer(8), expandedLength: 0, parameters: sets[0].parameters)) }
        for position in 0..<count { segments[position].expandedLength = try integer(8) }
        for position in 0..<count {
            let choice = Int(try integer(1))
            guard choice < sets.count else { throw fail() }
            let set = sets[choice]
            segments[position].parameters = set.parameters
            if let zstd = set.zstd { segments[position].zstd = zstd }
        }
        let total = segments.reduce(tail) { $0.plusSaturating($1.rawBefore).plusSaturating($1.expandedLength) }
        guard total == expanded, total < Int64.max else { throw fail() }
        self.init(segments: segments, tail: tail)
    }

    /// Reads the recipe at the start of a ``PatchEncoding/scannedDeflateDelta`` payload,
    /// decoding its columns against `layout` (the old file's, or empty for a new file);
    /// returns it and the bytes it took.
    package static func decodeColumns(
        from file: SystemFile, at offset: Int64, within length: Int64, layout: [UInt8],
        codec: EncodingParts.StreamCodec = .deflate, displayPath: String
    ) throws -> (DeflateRecipe, Int64) {
        let (columns, taken) = try ColumnFrame.decode(
            from: file, at: offset, within: length, prefix: layout, maxLength: maxColumnsLength,
            displayPath: displayPath, what: "recipe")
        do {
            return (try DeflateRecipe(columns: columns, codec: codec), taken)
        } catch PatchError.codec(_, let message) {
            throw PatchError.codec(path: displayPath, message: message)
        }
    }
}
