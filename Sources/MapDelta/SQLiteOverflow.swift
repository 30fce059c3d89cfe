import Foundation
import MapPlatform

/// The overflow chains of an SQLite database (an MBTiles tile archive, plain or with the
/// deduplicated `map`/`images` schema): a row whose payload does not fit its page keeps
/// the first part in its cell and the rest in a chain of overflow pages, each starting with
/// the next page's number. The ``GatherMap`` this makes puts each chain's content right
/// after its cell's local part, so a gzip'd tile cut over several pages is one stream again.
///
/// Read from the file format (sqlite.org/fileformat2.html), not through SQLite: every page
/// whose type is a table leaf is read, each cell's payload size gives its local part, and
/// its chain is followed. Anything out of range drops that cell's chain (it stays in place,
/// byte-level); pages are claimed once, by a walk that failed too, so the work is linear in
/// the file's size. Deterministic, so the client finds in its old file
/// the map the publisher found.
package enum SQLiteOverflow {
    /// The gather map of the database at `path`; the identity for a file that is not one.
    package static func map(of path: String) -> GatherMap {
        guard let mapped = try? MappedFile(path: path) else { return .identity }
        return map(of: mapped.bytes)
    }

    /// ``map(of:)`` over bytes in memory.
    package static func map(of bytes: UnsafeRawBufferPointer) -> GatherMap {
        var steps = 0
        return map(of: bytes, steps: &steps)
    }

    /// ``map(of:)`` over bytes in memory, counting in `steps` the overflow pages its chain
    /// walks entered: at most the file's pages, whatever the file holds.
    package static func map(of bytes: UnsafeRawBufferPointer, steps: inout Int) -> GatherMap {
        guard let database = Database(bytes) else { return .identity }
        var claimed = [Bool](repeating: false, count: database.pageCount + 1)
        // A page that is a b-tree page is never taken as part of a chain, nor is a free page:
        // a freed leaf keeps its old cells (SQLite does not clear it), which point into pages
        // live rows may use now, so it is not walked either.
        for page in 1...database.pageCount where database.isTreePage(page) { claimed[page] = true }
        let free = database.freePages()
        for page in free { claimed[page] = true }
        var moves: [(move: GatherMap.Move, order: Int)] = []
        for page in 1...database.pageCount where database.type(of: page) == 0x0D && !free.contains(page) {
            for cell in database.cells(of: page) {
                guard let chain = database.chain(of: cell, claimed: &claimed, steps: &steps) else { continue }
                for range in chain {
                    moves.append((GatherMap.Move(insertAt: cell.overflowPointer, from: range.from, length: range.length), moves.count))
                }
            }
        }
        moves.sort { ($0.move.insertAt, $0.order) < ($1.move.insertAt, $1.order) }
        return GatherMap(moves: moves.map(\.move), size: Int64(bytes.count)) ?? .identity
    }

    /// A database's pages, read in place.
    private struct Database {
        let bytes: UnsafeRawBufferPointer
        let pageSize: Int
        /// Bytes of a page SQLite uses (the page size less the reserved bytes).
        let usable: Int
        let pageCount: Int

        init?(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count >= 512, bytes.prefix(16).elementsEqual(Array("SQLite format 3".utf8) + [0]) else { return nil }
            let declared = Int(bytes[16]) << 8 | Int(bytes[17])
            let pageSize = declared == 1 ? 65536 : declared
            guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else { return nil }
            let usable = pageSize - Int(bytes[20])
            guard usable >= 480, bytes.count / pageSize >= 1, bytes.count / pageSize <= GatherMap.maxMoves else { return nil }
            self.bytes = bytes
            self.pageSize = pageSize
            self.usable = usable
            self.pageCount = bytes.count / pageSize
        }

        func offset(of page: Int) -> Int { (page - 1) * pageSize }

        /// The pages on the freelist: trunk pages from the header's first one on, each
        /// naming the next and its leaf pages. Each trunk is read once, so a looped or
        /// corrupt list costs at most a walk of the file's pages.
        func freePages() -> Set<Int> {
            var free = Set<Int>()
            var trunk = u32(32)
            while trunk >= 2, trunk <= pageCount, free.insert(trunk).inserted {
                let base = offset(of: trunk)
                let count = u32(base + 4)
                guard count <= usable / 4 - 2 else { break }
                for index in 0..<count {
                    let leaf = u32(base + 8 + 4 * index)
                    if leaf >= 2, leaf <= pageCount { free.insert(leaf) }
                }
                trunk = u32(base)
            }
            return free
        }

        /// Where the page's b-tree header starts (after the file header on page 1).
        func header(of page: Int) -> Int { offset(of: page) + (page == 1 ? 100 : 0) }

        func type(of page: Int) -> UInt8 { bytes[header(of: page)] }

        func isTreePage(_ page: Int) -> Bool { [0x02, 0x05, 0x0A, 0x0D].contains(type(of: page)) }

        func u16(_ at: Int) -> Int { Int(bytes[at]) << 8 | Int(bytes[at + 1]) }

        func u32(_ at: Int) -> Int { Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3]) }

        /// A cell whose payload overflows: where its overflow page number sits (right after
        /// the local part) and how many payload bytes the chain holds.
        struct Cell {
            var overflowPointer: Int64
            var remaining: Int
        }

        /// The overflowing cells of table leaf `page`, in cell-pointer order.
        func cells(of page: Int) -> [Cell] {
            let base = offset(of: page)
            let end = base + usable
            let head = header(of: page)
            guard head + 8 <= end else { return [] }
            let count = u16(head + 3)
            guard head + 8 + 2 * count <= end else { return [] }
            var out: [Cell] = []
            let maxLocal = usable - 35
            let minLocal = (usable - 12) * 32 / 255 - 23
            for index in 0..<count {
                var at = base + u16(head + 8 + 2 * index)
                guard at < end, let payload = varint(&at, end: end), varint(&at, end: end) != nil,
                    payload > Int64(maxLocal), payload < Int64(1) << 40
                else { continue }
                let size = Int(payload)
                let surplus = minLocal + (size - minLocal) % (usable - 4)
                let local = surplus <= maxLocal ? surplus : minLocal
                guard at + local + 4 <= end else { continue }
                out.append(Cell(overflowPointer: Int64(at + local), remaining: size - local))
            }
            return out
        }

        /// The content ranges of `cell`'s overflow chain, in order, each page claimed; `nil`
        /// when the chain leaves the file, loops, meets a claimed page or ends early. The
        /// pages a refused walk passed stay claimed, so no page is walked twice and the map
        /// of any file costs a walk of its pages and cells once, however its chains are built
        /// to fail (SQLite never shares a page between live chains, and free pages, whose old
        /// cells may point into live ones, are never walked).
        func chain(of cell: Cell, claimed: inout [Bool], steps: inout Int) -> [(from: Int64, length: Int64)]? {
            guard cell.remaining <= (pageCount - 1) * (usable - 4) else { return nil }
            var ranges: [(from: Int64, length: Int64)] = []
            var remaining = cell.remaining
            var page = u32(Int(cell.overflowPointer))
            while remaining > 0 {
                guard page >= 2, page <= pageCount, !claimed[page] else { return nil }
                claimed[page] = true
                steps += 1
                let length = min(remaining, usable - 4)
                ranges.append((Int64(offset(of: page) + 4), Int64(length)))
                remaining -= length
                page = u32(offset(of: page))
            }
            return ranges
        }

        /// An SQLite varint (1–9 bytes, big-endian groups of 7 bits, the ninth byte whole).
        func varint(_ at: inout Int, end: Int) -> Int64? {
            var value: UInt64 = 0
            for index in 0..<9 {
                guard at < end else { return nil }
                let byte = bytes[at]
                at += 1
                if index == 8 { return Int64(bitPattern: value << 8 | UInt64(byte)) }
                value = value << 7 | UInt64(byte & 0x7F)
                if byte & 0x80 == 0 { return Int64(bitPattern: value) }
            }
            return nil
        }
    }
}
