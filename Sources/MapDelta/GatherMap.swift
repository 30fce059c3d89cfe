import Foundation
import MapModel
package import MapPlatform

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

    /// The most moves a map may hold: one per overflow page of a database of 4 GiB in 4 KiB
    /// pages (see-through deltas are for files far smaller), so a decoded map takes at most
    /// 24 MB whatever a payload claims.
    package static let maxMoves = 1 << 20

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
            try input.copy(from: piece.offset, length: piece.length, buffer: buffer) { try output.writeAll($0) }
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
            try gathered.copy(from: piece.gathered, length: piece.length, buffer: buffer, to: output)
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
        ByteReader.appendVarint(UInt64(moves.count), to: &out)
        var previous: Int64 = 0
        for move in moves {
            ByteReader.appendVarint(UInt64(move.insertAt - previous), to: &out)
            previous = move.insertAt
        }
        var end: Int64 = 0
        for move in moves {
            let delta = move.from - end
            ByteReader.appendVarint(UInt64(bitPattern: (delta << 1) ^ (delta >> 63)), to: &out)
            end = move.from + move.length
        }
        for move in moves { ByteReader.appendVarint(UInt64(move.length), to: &out) }
        return out
    }

    /// The map its ``columns`` spell for a file of `size` bytes; refuses anything that is
    /// malformed or not a permutation.
    package init(columns bytes: [UInt8], size: Int64) throws {
        func fail() -> PatchError { .corrupt(detail: "see-through payload has an invalid gather map") }
        var reader = ByteReader(bytes)
        let count = try reader.count(minimumEntrySize: 3)
        guard count <= Self.maxMoves else { throw fail() }
        var moves = [Move](repeating: Move(insertAt: 0, from: 0, length: 0), count: count)
        var previous: Int64 = 0
        for i in moves.indices {
            previous = previous.plusSaturating(try reader.varint())
            moves[i].insertAt = previous
        }
        for i in moves.indices {
            let zigzag = UInt64(try reader.varint())
            moves[i].from = Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1)))
        }
        for i in moves.indices { moves[i].length = try reader.varint() }
        guard reader.remaining == 0, let map = GatherMap(moves: Self.resolved(moves), size: size) else { throw fail() }
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
    package static let maxColumnsLength = 32 << 20

    /// Reads the map at the start of a ``PatchEncoding/gatheredDeflateDelta`` payload: a
    /// ``ColumnFrame`` of the new file's ``columns`` with the `old` file's as prefix. Returns
    /// the map (checked against the target's `size`) and the bytes it took.
    package static func decodeFrame(
        from file: SystemFile, at offset: Int64, within length: Int64, old: GatherMap, size: Int64,
        displayPath: String
    ) throws -> (GatherMap, Int64) {
        let (columns, taken) = try ColumnFrame.decode(
            from: file, at: offset, within: length, prefix: old.columns, maxLength: maxColumnsLength,
            displayPath: displayPath, what: "gather map")
        return (try GatherMap(columns: columns, size: size), taken)
    }
}
