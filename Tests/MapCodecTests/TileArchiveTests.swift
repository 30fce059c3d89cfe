import Foundation
import MapDelta
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// Tile archives and other containers MapLoader does not parse: their gzip and zlib
/// streams are found by scanning, so a patch costs about the changed tiles' content.
@Suite struct TileArchiveTests {
    /// Writes a PMTiles v3 archive with the reference `pmtiles` writer (PyPI): tiles of
    /// zoom 0–5 as vector-tile-like protobuf bytes, gzip'd as tile generators ship them
    /// (ocean tiles repeat and are stored once); `changed` tiles differ in revision 2.
    /// Written in tile-id order the archive is clustered; in reverse order it is not. With
    /// `zstdLevel` the tiles are zstd frames of that level instead (the header says zstd),
    /// made by the libzstd this build links (`libzstd.so.1`, through ctypes), as a pipeline
    /// whose tile generator and publisher share one zstd would make them.
    static func writePMTiles(_ path: URL, revision: Int, changed: Int = 12, clustered: Bool = true, zstdLevel: Int? = nil) throws {
        try LargeFixtures.python(
            """
            import ctypes, gzip, random, sys
            from pmtiles.tile import zxy_to_tileid, TileType, Compression
            from pmtiles.writer import Writer
            revision, changed, clustered, zstd_level = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1", int(sys.argv[5])
            def compress(data):
                if zstd_level == 0:
                    return gzip.compress(data, mtime=0)
                lib = ctypes.CDLL("libzstd.so.1")
                lib.ZSTD_compressBound.restype = ctypes.c_size_t
                lib.ZSTD_compress.restype = ctypes.c_size_t
                lib.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
                out = ctypes.create_string_buffer(lib.ZSTD_compressBound(len(data)))
                length = lib.ZSTD_compress(out, len(out), data, len(data), zstd_level)
                return out.raw[:length]
            def tile(z, x, y):
                r = random.Random(z * 10007 + x * 101 + y)
                if r.random() < 0.3:
                    return b"\\x1a\\x0f\\x0a\\x05water\\x28\\x80\\x20\\x78\\x02"  # an ocean tile, the same everywhere
                layers = []
                for name in (b"building", b"transportation", b"landuse", b"poi"):
                    features = b"".join(bytes([0x12, 12, 0x18, 3, 0x22, 8]) + bytes(r.randrange(0, 40) for _ in range(8)) for _ in range(r.randrange(20, 60)))
                    layers.append(b"\\x1a" + bytes([len(name) + 2 + len(features) & 0x7f | 0x80, (len(name) + 2 + len(features)) >> 7]) + b"\\x0a" + bytes([len(name)]) + name + features)
                data = b"".join(layers)
                if revision > 1 and random.Random(x * 31 + y * 17 + z * 7919).random() < changed / 1365:
                    data = data.replace(b"poi", b"POI", 1) + b"\\x2a\\x03new"
                return data
            with open(sys.argv[1], "wb") as f:
                writer = Writer(f)
                ids = [(z, x, y) for z in range(6) for x in range(2 ** z) for y in range(2 ** z)]
                ids.sort(key=lambda t: zxy_to_tileid(*t), reverse=not clustered)
                for z, x, y in ids:
                    writer.write_tile(zxy_to_tileid(z, x, y), compress(tile(z, x, y)))
                writer.finalize({"tile_type": TileType.MVT, "tile_compression": Compression.ZSTD if zstd_level else Compression.GZIP,
                                 "min_lon_e7": -1800000000, "min_lat_e7": -850000000, "max_lon_e7": 1800000000,
                                 "max_lat_e7": 850000000, "center_zoom": 0, "center_lon_e7": 0, "center_lat_e7": 0},
                                {"name": "test", "revision": revision})
            """, [path.path, String(revision), String(changed), clustered ? "1" : "0", String(zstdLevel ?? 0)])
    }

    @Test(arguments: [true, false])
    func aPMTilesArchiveIsPatchedInsideItsTiles(clustered: Bool) async throws {
        let dir = TemporaryDirectory()
        for revision in [1, 2] {
            try FileManager.default.createDirectory(at: dir.path("r\(revision)"), withIntermediateDirectories: true)
            try await RawThread.run {
                try Self.writePMTiles(dir.path("r\(revision)/world.pmtiles"), revision: revision, clustered: clustered)
            }
        }
        // The header's clustered flag (byte 96 of PMTiles v3) is what was asked for.
        #expect(try Data(contentsOf: dir.path("r2/world.pmtiles"))[96] == (clustered ? 1 : 0))
        let streams = DeflateStreams.scan(in: dir.path("r2/world.pmtiles").path)
        #expect(DeflateStreams.find(in: dir.path("r2/world.pmtiles").path).isEmpty, "PMTiles is no container MapLoader parses")
        #expect(streams.count > 500, "\(streams.count) streams: the gzip'd tiles, metadata and directories")
        try await TileArchiveTests.expectPatchedInside(dir, "world.pmtiles", as: .scannedDeflateDelta)
    }

    /// An OSM PBF whose lengths are varints as large as an Int64 holds (a damaged card, a
    /// hostile file): the parser finds no stream and traps nowhere.
    @Test(arguments: ["a BlobHeader's datasize", "a Blob's zlib_data length"])
    func anOSMPBFWithHostileLengthsHasNoStreamsAndNoTrap(_ hostile: String) throws {
        let huge: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]  // Int64.max
        let body: [UInt8] = [0x1A] + huge + Array(repeating: 0x55, count: 12)  // field 3, length-delimited
        let dataSize: [UInt8] = hostile.hasPrefix("a BlobHeader") ? huge : [UInt8(body.count)]
        let header: [UInt8] = [0x0A, 0x07] + Array("OSMData".utf8) + [0x18] + dataSize  // type, datasize
        let bytes: [UInt8] = [0, 0, 0, UInt8(header.count)] + header + body
        let dir = TemporaryDirectory()
        try Data(bytes).write(to: dir.path("hostile.osm.pbf"))
        #expect(DeflateStreams.find(in: dir.path("hostile.osm.pbf").path).isEmpty)
    }

    @Test func scanningTakesOnlyWholeStreamsWithMatchingChecks() throws {
        var bytes = [UInt8]()
        var rng = SeededGenerator(seed: 11)
        func noise(_ count: Int) { for _ in 0..<count { bytes.append(UInt8.random(in: 0...255, using: &rng)) } }
        noise(500)
        // Headers with nothing valid behind them: a gzip header, zlib's four header pairs.
        bytes += [0x1F, 0x8B, 0x08, 0x00, 0, 0, 0, 0, 0, 0xFF]
        noise(100)
        for second: UInt8 in [0x01, 0x5E, 0x9C, 0xDA] {
            bytes += [0x78, second]
            noise(40)
        }
        let content = Array(String(repeating: "{\"type\":\"Feature\",\"name\":\"road\"}", count: 40).utf8)
        let gzipAt = bytes.count
        bytes += try Self.gzip(content)
        noise(77)
        let zlibAt = bytes.count
        bytes += try Self.zlib(content)
        noise(30)
        // A gzip member whose CRC was damaged is not a stream.
        var damaged = try Self.gzip(content)
        damaged[damaged.count - 6] ^= 0xFF
        bytes += damaged
        let streams = bytes.withUnsafeBytes { DeflateStreams.scan($0) }
        #expect(streams.map(\.offset) == [Int64(gzipAt + 10), Int64(zlibAt + 2)], "\(streams)")
    }

    /// A file of no known container: a binary header, records and two zlib streams (as an
    /// application's own format would hold them); revision 2 changes a few records inside
    /// the streams. The patch is scanned see-through and rebuilds the file byte for byte.
    @Test func zlibStreamsInsideAnUnknownFileArePatchedInsideThem() async throws {
        let dir = TemporaryDirectory()
        for revision in [1, 2] {
            var bytes = Array("MYFORMAT".utf8) + [0, 1, 2, 3]
            var rng = SeededGenerator(seed: 3)
            for part in 0..<2 {
                for _ in 0..<300 { bytes.append(UInt8.random(in: 0...255, using: &rng)) }
                let records = (0..<4000).map { index in
                    let name = revision == 2 && index % 500 == part ? "Renamed" : "Road"
                    return "\(index),\(name) \(index * 7 % 1000),\(index % 13)\n"
                }
                bytes += try Self.zlib(Array(records.joined().utf8))
            }
            try FileManager.default.createDirectory(at: dir.path("r\(revision)"), withIntermediateDirectories: true)
            try Data(bytes).write(to: dir.path("r\(revision)/roads.bin"))
        }
        #expect(DeflateStreams.scan(in: dir.path("r2/roads.bin").path).count == 2)
        try await TileArchiveTests.expectPatchedInside(dir, "roads.bin", as: .scannedDeflateDelta)
    }

    /// Builds the patch from `dir/r1` to `dir/r2` and checks that `name` is patched inside
    /// its streams (`encoding`, below the best byte-level payload divided by `smallerBy`) and
    /// is rebuilt byte for byte.
    static func expectPatchedInside(
        _ dir: TemporaryDirectory, _ name: String, as encoding: PatchEncoding, options: PatchOptions = .comparingEvery(level: 19),
        smallerBy: Int64 = 4
    ) async throws {
        let patch = dir.path("p.mlpatch")
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("r1"), to: dir.path("r2"), output: patch, options: options)
        }
        let file = try #require(stats.file(name))
        #expect(file.encoding?.withFrameExpansion == encoding, "\(file.note ?? "") \(file.tried)")
        let byteLevel = try #require(
            [file.tried[.delta], file.tried[.suffixDelta], file.tried[.filteredSuffixDelta], file.tried[.sparseSuffixDelta]].compactMap { $0 }.min())
        #expect(file.payloadBytes * smallerBy < byteLevel, "see-through \(file.payloadBytes) B, byte-level \(byteLevel) B")
        let out = dir.path("out")
        _ = try await RawThread.value { try PatchApplier.apply(patch: patch, oldTree: dir.path("r1"), into: out) }
        #expect(try Data(contentsOf: out.appendingPathComponent(name)) == Data(contentsOf: dir.path("r2/\(name)")))
    }

    static func gzip(_ content: [UInt8]) throws -> [UInt8] {
        try compress(content, python: "gzip.compress(data, mtime=0)")
    }

    static func zlib(_ content: [UInt8]) throws -> [UInt8] {
        try compress(content, python: "zlib.compress(data, 9)")
    }

    private static func compress(_ content: [UInt8], python expression: String) throws -> [UInt8] {
        let dir = TemporaryDirectory()
        try Data(content).write(to: dir.path("in"))
        try LargeFixtures.python(
            "import gzip, sys, zlib\ndata = open(sys.argv[1], 'rb').read()\nopen(sys.argv[2], 'wb').write(\(expression))",
            [dir.path("in").path, dir.path("out").path])
        return Array(try Data(contentsOf: dir.path("out")))
    }
}
