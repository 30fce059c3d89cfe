import Foundation
import MapDelta
import MapPublisher
import MapTestSupport
import Synchronization
import Testing

@testable import MapLoader

/// See-through deltas of files holding deflate streams (gzip, zip, OSM PBF, PNG): the change is
/// diffed inside the compression and zlib rebuilds the exact compressed bytes; a stream
/// zlib cannot reproduce stays compressed. Every result is checked byte for byte.
@Suite struct SeeThroughTests {
    @Test func aGzipChangeIsPatchedInsideTheCompression() async throws {
        let dir = TemporaryDirectory()
        try await RawThread.run { try LargeFixtures.writeGeoJSONRelease(dir.path("old"), renamed: 0) }
        try await RawThread.run { try LargeFixtures.writeGeoJSONRelease(dir.path("new"), renamed: 40) }
        let patch = dir.path("p.mlpatch")
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: patch, options: .comparingEvery(level: 19))
        }
        let file = try #require(stats.file("places.geojson.gz"))
        #expect(file.encoding?.withFrameExpansion == .deflateDelta)
        let byteLevel = try #require(file.tried[.delta])
        // Forty renames scattered through the file: almost every deflate block changes, so a
        // byte-level delta is most of the file; inside the compression it is a few hundred bytes.
        #expect(file.payloadBytes * 20 < byteLevel, "see-through \(file.payloadBytes) B, byte-level \(byteLevel) B")
        #expect(file.payloadBytes * 100 < file.size)
        // The client expands the old file and the new one in scratch files beside the new
        // tree: the plan's disk estimate counts both expansions.
        let expanded = try ["old", "new"].reduce(Int64(0)) { total, side in
            let path = dir.path("\(side)/places.geojson.gz").path
            let lengths = try DeflateRecipe.expand(path, streams: DeflateStreams.find(in: path), into: dir.path("\(side).expanded").path)
            return total + lengths.reduce(0, +)
        }
        let written = stats.files.filter { $0.operation == .add || $0.operation == .patch }.reduce(Int64(0)) { $0 + $1.size }
        #expect(stats.writeBytes >= written + expanded, "writes \(stats.writeBytes) B: files \(written) B, expansions \(expanded) B")
        let out = dir.path("out")
        _ = try await RawThread.value { try PatchApplier.apply(patch: patch, oldTree: dir.path("old"), into: out) }
        #expect(try Data(contentsOf: out.appendingPathComponent("places.geojson.gz")) == Data(contentsOf: dir.path("new/places.geojson.gz")))
    }

    /// Runs a Python script with `arguments`.
    @Test func byteLevelTrialsAreSkippedWhenTheSeeThroughDeltaIsTiny() async throws {
        let dir = TemporaryDirectory()
        try await RawThread.run { try LargeFixtures.writeGeoJSONRelease(dir.path("old"), renamed: 0) }
        try await RawThread.run { try LargeFixtures.writeGeoJSONRelease(dir.path("new"), renamed: 40) }
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path("p"), options: PatchOptions(level: 19))
        }
        let file = try #require(stats.file("places.geojson.gz"))
        #expect(file.encoding?.withFrameExpansion == .deflateDelta)
        #expect(file.tried[.delta] == nil && file.tried[.zstd] == nil, "\(file.tried)")
        #expect(file.note?.contains("byte-level trials skipped") == true, "\(file.note ?? "no note")")
        let last = Mutex<Int64>(0)
        let files = try await RawThread.value {
            try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out")) { done in
                last.withLock { $0 = done }
            }
        }
        #expect(try Data(contentsOf: dir.path("out/places.geojson.gz")) == Data(contentsOf: dir.path("new/places.geojson.gz")))
        #expect(last.withLock { $0 } == files.reduce(0) { $0 + $1.size }, "progress ends at the tree's size")
    }

    /// A zip of a shapefile-like set (two deflated entries, one stored) and an OSM-PBF-like
    /// file (blocks framed as PBF, `zlib_data` blobs), as revision `revision`.
    static func writeContainers(_ root: URL, revision: Int) throws {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try LargeFixtures.python(
            """
            import random, struct, sys, zipfile, zlib
            random.seed(3)
            rows = ["%d,%s,%.5f,%.5f\\n" % (i, "road %d" % i, random.uniform(-180, 180), random.uniform(-90, 90)) for i in range(20000)]
            for i in range(0, int(sys.argv[3]) * 211, 211): rows[i] = rows[i].replace("road", "street")
            dbf = "".join(rows).encode()
            with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr(zipfile.ZipInfo("roads.dbf", (2026, 1, 1, 0, 0, 0)), dbf, zipfile.ZIP_DEFLATED)
                z.writestr(zipfile.ZipInfo("roads.prj", (2026, 1, 1, 0, 0, 0)), b"GEOGCS[WGS84]", zipfile.ZIP_STORED)
                z.writestr(zipfile.ZipInfo("roads.shp", (2026, 1, 1, 0, 0, 0)), dbf[::-1], zipfile.ZIP_DEFLATED)
            def field(number, payload):
                return bytes([number << 3 | 2]) + varint(len(payload)) + payload
            def varint(n):
                out = b""
                while True:
                    byte, n = n & 0x7F, n >> 7
                    out += bytes([byte | (0x80 if n else 0)])
                    if not n: return out
            with open(sys.argv[2], "wb") as f:
                for start in range(0, len(dbf), 60000):
                    block = dbf[start:start + 60000]
                    blob = bytes([0x10]) + varint(len(block)) + field(3, zlib.compress(block, 6))
                    header = field(1, b"OSMData") + bytes([0x18]) + varint(len(blob))
                    f.write(struct.pack(">I", len(header)) + header + blob)
            # A raster tile: 256x256 RGB, IDAT chunks of 8192 bytes as libpng writes them;
            # each revision repaints a few squares.
            width = height = 256
            px = bytearray()
            for y in range(height):
                px.append(0)  # filter: none
                for x in range(width):
                    px += bytes([(x + y) % 256, (x * 3) % 256, random.randrange(0, 16) + 100])
            for k in range(int(sys.argv[3])):
                x0, y0 = (k * 37) % 230, (k * 53) % 230
                for y in range(y0, y0 + 8):
                    for x in range(x0, x0 + 8):
                        px[y * (width * 3 + 1) + 1 + x * 3] = 255
            def chunk(kind, data):
                return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
            stream = zlib.compress(bytes(px), 6)
            png = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            png += b"".join(chunk(b"IDAT", stream[i:i + 8192]) for i in range(0, len(stream), 8192)) + chunk(b"IEND", b"")
            open(sys.argv[4], "wb").write(png)
            # The same image as real encoders write it, with filtered scanlines: Pillow
            # (zlib level 6, memLevel 9, Z_FILTERED) and libpng through netpbm's pnmtopng
            # (level 6, memLevel 8, Z_FILTERED, IDAT chunks of 8192 bytes).
            import subprocess
            from PIL import Image
            rgb = b"".join(bytes(px[y * (width * 3 + 1) + 1:(y + 1) * (width * 3 + 1)]) for y in range(height))
            Image.frombytes("RGB", (width, height), rgb).save(sys.argv[5], "PNG")
            ppm = b"P6 %d %d 255\\n" % (width, height) + rgb
            open(sys.argv[6], "wb").write(subprocess.run(["pnmtopng"], input=ppm, capture_output=True, check=True).stdout)
            """,
            [
                root.appendingPathComponent("roads.zip").path, root.appendingPathComponent("roads.osm.pbf").path, String(revision),
                root.appendingPathComponent("tile.png").path, root.appendingPathComponent("pillow.png").path,
                root.appendingPathComponent("libpng.png").path,
            ])
    }

    @Test(arguments: ["roads.zip", "roads.osm.pbf", "tile.png", "pillow.png", "libpng.png"])
    func zipEntriesPBFBlobsAndPNGImagesArePatchedInsideTheCompression(file name: String) async throws {
        let dir = TemporaryDirectory()
        try await RawThread.run { try Self.writeContainers(dir.path("old"), revision: 1) }
        try await RawThread.run { try Self.writeContainers(dir.path("new"), revision: 30) }
        let patch = dir.path("p.mlpatch")
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: patch, options: .comparingEvery(level: 19))
        }
        let file = try #require(stats.file(name))
        #expect(file.encoding?.withFrameExpansion == .deflateDelta, "\(file.note ?? "")")
        let byteLevel = try #require(file.tried[.delta])
        // Real encoders filter scanlines (Paeth, Sub, …), so a repainted square changes more
        // of the inflated rows than in the unfiltered tile: a smaller, but real, gain.
        let gain: Int64 = name == "pillow.png" || name == "libpng.png" ? 4 : 10
        #expect(file.payloadBytes * gain < byteLevel, "see-through \(file.payloadBytes) B, byte-level \(byteLevel) B")
        let out = dir.path("out")
        _ = try await RawThread.value { try PatchApplier.apply(patch: patch, oldTree: dir.path("old"), into: out) }
        #expect(try Data(contentsOf: out.appendingPathComponent(name)) == Data(contentsOf: dir.path("new/\(name)")))
        // Two deflated entries of the zip (the stored one is raw); one blob per 60 kB block
        // of the PBF; one run of IDAT chunks in the PNG.
        let streams = DeflateStreams.find(in: dir.path("new/\(name)").path)
        switch name {
        case "roads.zip": #expect(streams.count == 2)
        case "tile.png", "libpng.png": #expect(streams.count == 1 && streams[0].png?.chunkSize == 8192)
        case "pillow.png": #expect(streams.count == 1 && streams[0].png != nil)
        default: #expect(streams.count > 10)
        }
    }

    @Test func aStreamZlibCannotReproduceStaysAByteLevelDelta() async throws {
        let dir = TemporaryDirectory()
        try await RawThread.run { try LargeFixtures.writeGeoJSONRelease(dir.path("old"), renamed: 0, flushEvery: 50_000) }
        try await RawThread.run { try LargeFixtures.writeGeoJSONRelease(dir.path("new"), renamed: 40, flushEvery: 50_000) }
        let patch = dir.path("p.mlpatch")
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: patch, options: PatchOptions(level: 3))
        }
        let file = try #require(stats.file("places.geojson.gz"))
        #expect(file.encoding?.parts.view.seesThrough != true)
        #expect(file.note?.contains("zlib does not reproduce its deflate streams") == true)
        #expect(file.note?.contains("0% of its bytes seen through") == true, "\(file.note ?? "")")
        let out = dir.path("out")
        _ = try await RawThread.value { try PatchApplier.apply(patch: patch, oldTree: dir.path("old"), into: out) }
        #expect(try Data(contentsOf: out.appendingPathComponent("places.geojson.gz")) == Data(contentsOf: dir.path("new/places.geojson.gz")))
    }

    @Test func aDamagedRecipeFailsTheHashAndLeavesNoFile() async throws {
        let dir = TemporaryDirectory()
        try await RawThread.run { try LargeFixtures.writeGeoJSONRelease(dir.path("old"), renamed: 0) }
        try await RawThread.run { try LargeFixtures.writeGeoJSONRelease(dir.path("new"), renamed: 40) }
        let patch = dir.path("p.mlpatch")
        _ = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: patch, options: PatchOptions(level: 3))
        }
        let opened = try OpenedPatch(url: patch)
        let payload = try #require(opened.manifest.targets.first { $0.path == "places.geojson.gz" }?.origin.payload)
        #expect(payload.encoding.withFrameExpansion == .deflateDelta)
        // The first segment's level byte (after the 20-byte head and the segment's two
        // lengths), 6 → 9: zlib then writes other bytes.
        var bytes = try Data(contentsOf: patch)
        #expect(bytes[Int(payload.offset) + 36] == 6)
        bytes[Int(payload.offset) + 36] = 9
        try bytes.write(to: patch)
        let out = dir.path("out")
        let error = patchError { try PatchApplier.apply(patch: patch, oldTree: dir.path("old"), into: out) }
        guard case .outputMismatch(let path, _, _, _, _)? = error else {
            Issue.record("expected an output mismatch, got \(String(describing: error))")
            return
        }
        #expect(path == "places.geojson.gz")
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("places.geojson.gz").path))
        #expect(throws: PatchError.self) {
            _ = try DeflateRecipe.decode(from: try SystemFile.openForReading(patch.path), at: payload.offset + 1, within: payload.length - 1)
        }
    }
}

extension SeeThroughTests {
    @Test func aNewGzipFileTravelsAsItsContentAndARecipe() async throws {
        let dir = TemporaryDirectory()
        try await RawThread.run { try LargeFixtures.writeGeoJSONRelease(dir.path("new"), renamed: 10) }
        try FileManager.default.createDirectory(at: dir.path("old"), withIntermediateDirectories: true)
        try Data("unchanged\n".utf8).write(to: dir.path("old/readme.txt"))
        let patch = dir.path("p.mlpatch")
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: patch, options: .comparingEvery(level: 19))
        }
        let file = try #require(stats.file("places.geojson.gz"))
        #expect(file.operation == .add && file.encoding?.withFrameExpansion == .deflateDelta, "\(file.encoding.map { "\($0)" } ?? "-") \(file.tried)")
        let zstd = try #require(file.tried[.zstd])
        #expect(file.payloadBytes * 10 < zstd * 9, "content and recipe \(file.payloadBytes) B, zstd of the gzip \(zstd) B")
        _ = try await RawThread.value { try PatchApplier.apply(patch: patch, oldTree: dir.path("old"), into: dir.path("out")) }
        #expect(try Data(contentsOf: dir.path("out/places.geojson.gz")) == Data(contentsOf: dir.path("new/places.geojson.gz")))
    }
}
