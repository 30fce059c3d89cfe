import Foundation
import MapModel
import MapPlatform

/// A file's bytes in another order, so that a deflate stream a container cut into
/// fragments lies in one piece: each ``Move`` takes a range of the file out of its place
/// and puts it before the byte at ``Move/insertAt``. An SQLite database (MBTiles) keeps a
/// tile larger than a page in its cell's page and a chain of overflow pages; gathered, the
/// tile's gzip stream is whole and a scan finds it (``SQLiteOverflow``).
///
/// The gathered file has the file's size and the same bytes: ``gather(_:into:)`` makes it
/// and ``scatter(_:size:output:)`` puts its bytes back in file order. Every map a decoder
/// accepts is a permutation, so a map that was wrong can only make a file whose SHA-256
/// fails, never read or write out of bounds.
package struct GatherMap: Sendable, Equatable {
    /// One range of the file moved before the byte at `insertAt`.
    package struct Move: Sendable, Equatable {
        /// The file offset the range is put before (the file's size: at the end).
        package var insertAt: Int64
        /// Where the range starts in the file.
        package var from: Int64
        /// Its length (at least 1).
        package var length: Int64

        package init(insertAt: Int64, from: Int64, length: Int64) {
            self.insertAt = insertAt
            self.from = from
            self.length = length
        }
    }

    /// The moves, by `insertAt`; moves to one place keep their order.
    package private(set) var moves: [Move]

    /// The most moves a map may hold (one per overflow page of a database of up to 64 GiB
    /// in 4 KiB pages).
    package static let maxMoves = 1 << 24

    /// The identity: nothing moves.
    package static let identity = GatherMap(checked: [])

    private init(checked moves: [Move]) { self.moves = moves }

    /// A map of `moves` over a file of `size` bytes; `nil` unless it is a permutation: every
    /// range inside the file and of positive length, no two overlapping, no insertion point
    /// strictly inside a moved range, `insertAt` never decreasing.
    package init?(moves: [Move], size: Int64) {
        guard moves.count <= Self.maxMoves, size >= 0 else { return nil }
        var previousInsert: Int64 = 0
        for move in moves {
            guard move.length > 0, move.from >= 0, move.from <= size - move.length,
                move.insertAt >= previousInsert, move.insertAt <= size
            else { return nil }
            previousInsert = move.insertAt
        }
        let ranges = moves.sorted { $0.from < $1.from }
        for (left, right) in zip(ranges, ranges.dropFirst()) where left.from + left.length > right.from {
            return nil
        }
        // Each insertion point against the ranges around it (both sorted: one pass).
        var index = 0
        for move in moves {
            while index < ranges.count, ranges[index].from + ranges[index].length <= move.insertAt { index += 1 }
            if index < ranges.count, ranges[index].from < move.insertAt { return nil }
        }
        self.moves = moves
    }

    /// Whether nothing moves.
    package var isIdentity: Bool { moves.isEmpty }

    /// The file ranges in gathered order, adjacent ones joined; they cover the file once.
    package func pieces(size: Int64) -> [(offset: Int64, length: Int64)] {
        var out: [(offset: Int64, length: Int64)] = []
        func emit(_ offset: Int64, _ length: Int64) {
            guard length > 0 else { return }
            if let last = out.last, last.offset + last.length == offset {
                out[out.count - 1].length += length
            } else {
                out.append((offset, length))
            }
        }
        let ranges = moves.sorted { $0.from < $1.from }
        var next = 0  // the first moved range not wholly before `cursor`
        var cursor: Int64 = 0
        // The bytes of [cursor, end) that stay in place.
        func stay(until end: Int64) {
            while cursor < end {
                while next < ranges.count, ranges[next].from + ranges[next].length <= cursor { next += 1 }
                if next < ranges.count, ranges[next].from <= cursor {
                    cursor = min(end, ranges[next].from + ranges[next].length)
                    continue
                }
                let stop = next < ranges.count ? min(end, ranges[next].from) : end
                emit(cursor, stop - cursor)
                cursor = stop
            }
        }
        for move in moves {
            stay(until: move.insertAt)
            emit(move.from, move.length)
        }
        stay(until: size)
        return out
    }

    /// Writes the gathered bytes of `input` (a file of `size` bytes) to `output`.
    package func gather(_ input: SystemFile, size: Int64, into output: SystemFile) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        for piece in pieces(size: size) {
            try Self.copy(input, from: piece.offset, length: piece.length, buffer: buffer) { try output.writeAll($0) }
        }
    }

    /// Hands the bytes of a file of `size` bytes to `output` in file order, read from its
    /// gathered form `gathered`.
    package func scatter(_ gathered: SystemFile, size: Int64, output: (UnsafeRawBufferPointer) throws -> Void) throws {
        var logical: Int64 = 0
        var placed: [(file: Int64, gathered: Int64, length: Int64)] = []
        for piece in pieces(size: size) {
            placed.append((piece.offset, logical, piece.length))
            logical += piece.length
        }
        placed.sort { $0.file < $1.file }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        for piece in placed {
            try Self.copy(gathered, from: piece.gathered, length: piece.length, buffer: buffer, to: output)
        }
    }

    private static func copy(
        _ input: SystemFile, from offset: Int64, length: Int64, buffer: UnsafeMutableRawBufferPointer,
        to output: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        var done: Int64 = 0
        while done < length {
            let want = Int(min(Int64(buffer.count), length - done))
            let part = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want])
            guard try input.readChunk(into: part, at: offset + done) == want else {
                throw PatchError.truncated(detail: "\(input.path) ends before its gathered bytes do")
            }
            try output(UnsafeRawBufferPointer(part))
            done += Int64(want)
        }
    }
}

// MARK: - Encoding

extension GatherMap {
    /// The map as columns of LEB128 numbers (compressed against the old file's map, they
    /// cost little when the database grew by a few pages): the number of moves, every
    /// move's `insertAt` minus the previous one's, every range's start minus the previous
    /// range's end (zigzag), every range's length.
    package var columns: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(moves.count * 6 + 4)
        func put(_ value: UInt64) {
            var value = value
            while value >= 0x80 {
                out.append(UInt8(value & 0x7F) | 0x80)
                value >>= 7
            }
            out.append(UInt8(value))
        }
        put(UInt64(moves.count))
        var previous: Int64 = 0
        for move in moves {
            put(UInt64(move.insertAt - previous))
            previous = move.insertAt
        }
        var end: Int64 = 0
        for move in moves {
            let delta = move.from - end
            put(UInt64(bitPattern: (delta << 1) ^ (delta >> 63)))
            end = move.from + move.length
        }
        for move in moves { put(UInt64(move.length)) }
        return out
    }

    /// The map its ``columns`` spell for a file of `size` bytes; refuses anything that is
    /// malformed or not a permutation.
    package init(columns bytes: [UInt8], size: Int64) throws {
        func fail() -> PatchError { .corrupt(detail: "see-through payload has an invalid gather map") }
        var index = 0
        func number() throws -> Int64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while index < bytes.count, shift < 64 {
                let byte = bytes[index]
                index += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 {
                    guard value <= UInt64(Int64.max) else { throw fail() }
                    return Int64(value)
                }
                shift += 7
            }
            throw fail()
        }
        let count = try number()
        guard count <= Int64(Self.maxMoves), count <= Int64(bytes.count) else { throw fail() }
        var moves = [Move](repeating: Move(insertAt: 0, from: 0, length: 0), count: Int(count))
        var previous: Int64 = 0
        for i in moves.indices {
            previous = previous.plusSaturating(try number())
            moves[i].insertAt = previous
        }
        for i in moves.indices {
            let zigzag = UInt64(try number())
            moves[i].from = Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1)))
        }
        for i in moves.indices {
            moves[i].length = try number()
        }
        guard index == bytes.count, let map = GatherMap(moves: Self.resolved(moves), size: size) else { throw fail() }
        self = map
    }

    /// `moves` whose `from` column holds each range's start minus the previous range's end,
    /// with the starts made absolute (saturating: a map that does not add up is refused).
    private static func resolved(_ moves: [Move]) -> [Move] {
        var out = moves
        var end: Int64 = 0
        for i in out.indices {
            out[i].from = end.plusSaturating(moves[i].from)
            end = out[i].from.plusSaturating(out[i].length)
        }
        return out
    }
}

// MARK: - In a payload

extension GatherMap {
    /// The most bytes the columns of one map may take.
    package static let maxColumnsLength = 256 << 20

    /// Reads the map at the start of a ``PatchEncoding/gatheredDeflateDelta`` payload:
    /// `u32 frame length, u32 columns length`, then one zstd frame of the new file's
    /// ``columns`` with the `old` file's as prefix. Returns the map (checked against the
    /// target's `size`) and the bytes it took.
    package static func decodeFrame(
        from file: SystemFile, at offset: Int64, within length: Int64, old: GatherMap, size: Int64,
        displayPath: String
    ) throws -> (GatherMap, Int64) {
        guard length >= 8 else { throw PatchError.truncated(detail: "see-through payload of \(displayPath) ends inside its gather map") }
        let head = try DeflateStreams.read(file, at: offset, count: 8)
        let frameLength = Int64(head[0..<4].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        let columnsLength = Int(head[4..<8].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard frameLength > 0, 8 + frameLength <= length, columnsLength <= maxColumnsLength else {
            throw PatchError.corrupt(detail: "see-through payload of \(displayPath) has an invalid gather map frame")
        }
        var columns: [UInt8] = []
        columns.reserveCapacity(columnsLength)
        let prefix = old.columns
        try prefix.withUnsafeBytes { raw in
            try ZstdDelta.decodeFrame(
                from: file, offset: offset + 8, length: frameLength, prefix: raw,
                expectedSize: Int64(columnsLength), displayPath: displayPath
            ) { columns += $0 }
        }
        return (try GatherMap(columns: columns, size: size), 8 + frameLength)
    }
}
