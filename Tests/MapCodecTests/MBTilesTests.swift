import Foundation
import MapDelta
import MapPlatform
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// MBTiles: an SQLite database whose gzip'd tiles are larger than a page, so each is cut
/// over a cell and a chain of overflow pages. Gathered (``SQLiteOverflow``), every tile is
/// one stream again and a patch costs about the changed tiles' content.
@Suite struct MBTilesTests {
    enum Schema: String, CaseIterable, Sendable {
        /// One `tiles` table.
        case plain
        /// `map` (tile coordinates → id) and `images` (id → data): repeated tiles stored once.
        case deduplicated
    }

    /// Writes an MBTiles archive with Python's sqlite3 (4 KiB pages): tiles of zoom 0–3
    /// as vector-tile-like protobuf bytes gzip'd as tile generators write them, most of
    /// them 5–12 kB compressed (several overflow pages each), a third of them the same
    /// ocean tile; `changed` of them differ in revision 2.
    static func write(_ path: URL, revision: Int, schema: Schema, changed: Int = 8) throws {
        try LargeFixtures.python(
            """
            import gzip, os, random, sqlite3, sys
            path, revision, schema, changed = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
            if os.path.exists(path):
                os.remove(path)
            def tile(z, x, y):
                r = random.Random(z * 10007 + x * 101 + y)
                if r.random() < 0.3:
                    return b"\\x1a\\x0f\\x0a\\x05water\\x28\\x80\\x20\\x78\\x02" * 40
                layers = []
                for name in (b"building", b"transportation", b"landuse", b"poi"):
                    features = b"".join(bytes([0x12, 12, 0x18, 3, 0x22, 8]) + bytes(r.randrange(0, 40) for _ in range(8)) for _ in range(r.randrange(150, 400)))
                    layers.append(b"\\x1a" + name + features)
                data = b"".join(layers)
                if revision > 1 and random.Random(x * 31 + y * 17 + z * 7919).random() < changed / 85:
                    data = data.replace(b"poi", b"POI", 1) + b"\\x2a\\x03new"
                return gzip.compress(data, mtime=0)
            db = sqlite3.connect(path)
            db.execute("pragma page_size = 4096")
            db.execute("create table metadata (name text, value text)")
            db.execute("insert into metadata values ('name', 'test'), ('format', 'pbf'), ('revision', ?)", (str(revision),))
            if schema == "plain":
                db.execute("create table tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob)")
                db.execute("create unique index tile_index on tiles (zoom_level, tile_column, tile_row)")
            else:
                db.execute("create table map (zoom_level integer, tile_column integer, tile_row integer, tile_id text)")
                db.execute("create table images (tile_data blob, tile_id text)")
                db.execute("create unique index map_index on map (zoom_level, tile_column, tile_row)")
                db.execute("create unique index images_id on images (tile_id)")
                db.execute("create view tiles as select zoom_level, tile_column, tile_row, tile_data from map join images on images.tile_id = map.tile_id")
            import hashlib
            for z in range(4):
                for x in range(2 ** z):
                    for y in range(2 ** z):
                        data = tile(z, x, y)
                        if schema == "plain":
                            db.execute("insert into tiles values (?, ?, ?, ?)", (z, x, y, data))
                        else:
                            key = hashlib.md5(data).hexdigest()
                            db.execute("insert into map values (?, ?, ?, ?)", (z, x, y, key))
                            db.execute("insert or ignore into images values (?, ?)", (data, key))
            db.commit()
            db.close()
            """, [path.path, String(revision), schema.rawValue, String(changed)])
    }

    @Test(arguments: Schema.allCases)
    func anMBTilesArchiveIsPatchedInsideItsTiles(schema: Schema) async throws {
        let dir = TemporaryDirectory()
        for revision in [1, 2] {
            try FileManager.default.createDirectory(at: dir.path("r\(revision)"), withIntermediateDirectories: true)
            try await RawThread.run { try Self.write(dir.path("r\(revision)/world.mbtiles"), revision: revision, schema: schema) }
        }
        let newPath = dir.path("r2/world.mbtiles").path
        let map = SQLiteOverflow.map(of: newPath)
        #expect(map.moves.count > 40, "\(map.moves.count) overflow pages moved")
        // Gathered, each tile is one whole gzip stream; in place, the scan finds only the
        // ones that fit a page.
        let gathered = dir.path("gathered").path
        let input = try SystemFile.openForReading(newPath)
        try map.gather(input, size: try input.size(), into: try SystemFile.createOrTruncate(gathered))
        let whole = DeflateStreams.scan(in: gathered).count
        let inPlace = DeflateStreams.scan(in: newPath).count
        #expect(whole >= 50 && whole > inPlace * 2, "\(whole) streams gathered, \(inPlace) in place")

        try await TileArchiveTests.expectPatchedInside(dir, "world.mbtiles", as: .gatheredDeflateDelta)
    }

    @Test func aDamagedGatherMapFailsTheApplyAndNothingElse() async throws {
        let dir = TemporaryDirectory()
        for revision in [1, 2] {
            try FileManager.default.createDirectory(at: dir.path("r\(revision)"), withIntermediateDirectories: true)
            try await RawThread.run { try Self.write(dir.path("r\(revision)/world.mbtiles"), revision: revision, schema: .plain) }
        }
        let patch = dir.path("p.mlpatch")
        _ = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("r1"), to: dir.path("r2"), output: patch, options: PatchOptions(level: 19))
        }
        let manifest = try PatchContainer.manifest(at: patch)
        guard case .patch(_, let payload) = try #require(manifest.targets.first { $0.path == "world.mbtiles" }).origin else {
            Issue.record("world.mbtiles is not patched")
            return
        }
        #expect(payload.encoding.withFrameExpansion == .gatheredDeflateDelta)
        // Flip bytes in the map's frame and the recipe after it: each apply must refuse
        // (a zstd, map or hash error), never crash or write a wrong file.
        let original = try Data(contentsOf: patch)
        for shift in [9, 12, 20, 40, 64] {
            var damaged = original
            let at = Int(payload.offset) + shift
            damaged[at] ^= 0x5A
            let copy = dir.path("damaged-\(shift).mlpatch")
            try damaged.write(to: copy)
            let out = dir.path("out-\(shift)")
            await #expect(throws: (any Error).self) {
                try await RawThread.value { try PatchApplier.apply(patch: copy, oldTree: dir.path("r1"), into: out) }
            }
        }
    }
}

/// The gather map on its own: a permutation, its columns, refusals.
@Suite struct GatherMapTests {
    @Test func piecesCoverTheFileOnceAndScatterUndoesGather() throws {
        let dir = TemporaryDirectory()
        let bytes = (0..<1000).map { UInt8($0 % 251) }
        try Data(bytes).write(to: dir.path("in"))
        let moves = [
            GatherMap.Move(insertAt: 10, from: 500, length: 100), GatherMap.Move(insertAt: 10, from: 200, length: 50),
            GatherMap.Move(insertAt: 700, from: 900, length: 100),
        ]
        let map = try #require(GatherMap(moves: moves, size: 1000))
        let pieces = map.pieces(size: 1000)
        #expect(pieces.map(\.length).reduce(0, +) == 1000)
        #expect(pieces.prefix(3).map(\.offset) == [0, 500, 200], "\(pieces)")
        let input = try SystemFile.openForReading(dir.path("in").path)
        try map.gather(input, size: 1000, into: try SystemFile.createOrTruncate(dir.path("g").path))
        let gathered = Array(try Data(contentsOf: dir.path("g")))
        #expect(Array(gathered[10..<110]) == Array(bytes[500..<600]))
        #expect(Array(gathered[110..<160]) == Array(bytes[200..<250]))
        var back: [UInt8] = []
        try map.scatter(try SystemFile.openForReading(dir.path("g").path), size: 1000) { back += $0 }
        #expect(back == bytes)
        #expect(try GatherMap(columns: map.columns, size: 1000) == map)
    }

    @Test func mapsThatAreNoPermutationAreRefused() {
        func map(_ moves: [(Int64, Int64, Int64)], size: Int64 = 1000) -> GatherMap? {
            GatherMap(moves: moves.map { GatherMap.Move(insertAt: $0.0, from: $0.1, length: $0.2) }, size: size)
        }
        #expect(map([(10, 500, 100)]) != nil)
        #expect(map([(10, 500, 100), (20, 550, 10)]) == nil, "overlapping ranges")
        #expect(map([(550, 500, 100)]) == nil, "inserted inside a moved range")
        #expect(map([(20, 500, 10), (10, 600, 10)]) == nil, "insertion points out of order")
        #expect(map([(10, 995, 10)]) == nil, "a range past the end")
        #expect(map([(10, 500, 0)]) == nil, "an empty range")
        #expect(map([(1001, 0, 10)]) == nil, "an insertion point past the end")
        #expect(throws: (any Error).self) { try GatherMap(columns: [0x05, 0x01], size: 1000) }
        #expect(throws: (any Error).self) { try GatherMap(columns: GatherMap(moves: [], size: 0)!.columns + [0], size: 0) }
    }

    /// Attack 7 of issue "Hostile signed payloads": a database whose cells all lead into one
    /// long overflow chain that ends a page early. Each cell's walk used to fail at the
    /// chain's end, give its pages back and let the next cell walk them again (9.9 s, 39 s
    /// and 146 s for 4, 8 and 16 MB files, on the publisher and on the client's old file).
    /// Now a refused walk keeps its pages: the walks enter at most the file's pages, the
    /// file maps as the identity, and a real chain elsewhere in the file is still gathered.
    @Test func chainsBuiltToFailAreWalkedOnce() {
        let page = 4096
        let pages = 1024
        let minLocal = (page - 12) * 32 / 255 - 23
        let leaves = 500
        let first = 2 + leaves + 1
        let chain = pages - first + 1
        func varint(_ value: Int) -> [UInt8] {
            var out = [UInt8(value & 0x7F)]
            var rest = value >> 7
            while rest > 0 {
                out.append(UInt8(0x80 | rest & 0x7F))
                rest >>= 7
            }
            return out.reversed()
        }
        func u32(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }
        /// A table leaf whose `count` cell pointers all name one cell leading to page `next`,
        /// whose payload needs `overflowPages` pages.
        func leaf(pointers count: Int, overflowPages: Int, next: Int) -> [UInt8] {
            let cell = varint(minLocal + (page - 4) * overflowPages) + varint(1) + [UInt8](repeating: 0, count: minLocal) + u32(next)
            let at = page - cell.count
            var bytes = [UInt8](repeating: 0, count: page)
            bytes[0] = 0x0D
            bytes[3] = UInt8(count >> 8)
            bytes[4] = UInt8(count & 0xFF)
            for index in 0..<count { (bytes[8 + 2 * index], bytes[9 + 2 * index]) = (UInt8(at >> 8), UInt8(at & 0xFF)) }
            bytes.replaceSubrange(at..<page, with: cell)
            return bytes
        }
        var file = [UInt8](repeating: 0, count: page)
        file.replaceSubrange(0..<16, with: Array("SQLite format 3".utf8) + [0])
        (file[16], file[17], file[100]) = (UInt8(page >> 8), 0, 0x0D)
        let hostileCells = (page - 600) / 2
        for _ in 0..<leaves { file += leaf(pointers: hostileCells, overflowPages: chain + 1, next: first) }
        file += leaf(pointers: 1, overflowPages: 1, next: pages + 1)  // page 502: one real chain of one page
        for number in first...pages {
            file += u32(number < pages ? number + 1 : 0) + [UInt8](repeating: 0, count: page - 4)
        }
        // The real chain's page sits past the hostile one, at the end.
        file += [0, 0, 0, 0] + [UInt8](repeating: 7, count: page - 4)
        var steps = 0
        let map = file.withUnsafeBytes { SQLiteOverflow.map(of: $0, steps: &steps) }
        #expect(steps <= pages + 1, "\(steps) pages entered for a file of \(pages + 1), \(leaves * hostileCells) cells")
        #expect(map.moves.count == 1 && map.moves.first?.from == Int64(pages * page + 4), "\(map.moves.count) moves")
    }

    /// A freed leaf keeps its old cells (SQLite does not clear a page it frees), and they
    /// may point into a chain a live row uses now. Free pages are never walked: the live
    /// tile is gathered whatever the page order (here the freed leaf, page 2, comes first,
    /// and its failed walk would otherwise keep the live chain's page).
    @Test func aFreedLeafDoesNotTakeALiveChain() {
        let page = 4096
        let minLocal = (page - 12) * 32 / 255 - 23
        func u32(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }
        func leaf(overflowPages: Int, next: Int) -> [UInt8] {
            let cell =
                [
                    0x80 | UInt8((minLocal + (page - 4) * overflowPages) >> 14 & 0x7F),
                    0x80 | UInt8((minLocal + (page - 4) * overflowPages) >> 7 & 0x7F),
                    UInt8((minLocal + (page - 4) * overflowPages) & 0x7F), 1,
                ] + [UInt8](repeating: 0, count: minLocal) + u32(next)
            let at = page - cell.count
            var bytes = [UInt8](repeating: 0, count: page)
            (bytes[0], bytes[3], bytes[4], bytes[8], bytes[9]) = (0x0D, 0, 1, UInt8(at >> 8), UInt8(at & 0xFF))
            bytes.replaceSubrange(at..<page, with: cell)
            return bytes
        }
        var file = [UInt8](repeating: 0, count: page)
        file.replaceSubrange(0..<16, with: Array("SQLite format 3".utf8) + [0])
        (file[16], file[17], file[100]) = (UInt8(page >> 8), 0, 0x0D)
        file.replaceSubrange(32..<40, with: u32(5) + u32(2))  // the freelist: trunk page 5, 2 pages
        file += leaf(overflowPages: 2, next: 4)  // page 2: freed, its old row needed pages 4 and on
        file += leaf(overflowPages: 1, next: 4)  // page 3: live, its row's chain is page 4
        file += u32(0) + [UInt8](repeating: 9, count: page - 4)  // page 4: the live chain
        file += u32(0) + u32(1) + u32(2) + [UInt8](repeating: 0, count: page - 12)  // page 5: trunk naming leaf 2
        let map = file.withUnsafeBytes { SQLiteOverflow.map(of: $0) }
        #expect(map.moves.count == 1 && map.moves.first?.from == Int64(3 * page + 4), "\(map.moves)")
    }
}
