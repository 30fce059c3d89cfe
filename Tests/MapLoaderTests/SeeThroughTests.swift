import Foundation
import Testing
@testable import MapLoader
import MapPublisher

/// See-through deltas of gzip files: the change is diffed inside the compression and zlib
/// rebuilds the exact compressed bytes; a stream zlib cannot reproduce stays a byte-level
/// delta. Every result is checked byte for byte.
@Suite struct SeeThroughTests {
    /// Writes `places.geojson.gz` (and a plain file) into `root` with Python's gzip module
    /// (zlib, level 6), `renamed` features renamed and, with `flushEvery`, a full flush
    /// every so many bytes, which zlib's plain deflate does not reproduce.
    static func writeRelease(_ root: URL, renamed: Int, flushEvery: Int? = nil) throws {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data("unchanged\n".utf8).write(to: root.appendingPathComponent("readme.txt"))
        let script = """
        import gzip, json, random, sys, zlib
        random.seed(7)
        feats = [{"type": "Feature", "properties": {"name": "place %d" % i, "pop": random.randint(1, 10**6)},
                  "geometry": {"type": "Point", "coordinates": [round(random.uniform(-180, 180), 5), round(random.uniform(-90, 90), 5)]}}
                 for i in range(6000)]
        for i in range(0, \(renamed) * 97, 97): feats[i]["properties"]["name"] += " (renamed)"
        raw = json.dumps({"type": "FeatureCollection", "features": feats}).encode()
        flush = \(flushEvery.map(String.init) ?? "None")
        if flush is None:
            data = gzip.compress(raw, compresslevel=6, mtime=0)
        else:
            c = zlib.compressobj(6, zlib.DEFLATED, -15)
            body = b"".join(c.compress(raw[i:i + flush]) + c.flush(zlib.Z_FULL_FLUSH) for i in range(0, len(raw), flush)) + c.flush()
            data = b"\\x1f\\x8b\\x08\\x00\\x00\\x00\\x00\\x00\\x00\\xff" + body + (zlib.crc32(raw) & 0xffffffff).to_bytes(4, "little") + (len(raw) & 0xffffffff).to_bytes(4, "little")
        open(sys.argv[1], "wb").write(data)
        """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, root.appendingPathComponent("places.geojson.gz").path]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    @Test func aGzipChangeIsPatchedInsideTheCompression() throws {
        let dir = TemporaryDirectory()
        try Self.writeRelease(dir.path("old"), renamed: 0)
        try Self.writeRelease(dir.path("new"), renamed: 40)
        let patch = dir.path("p.mlpatch")
        let stats = try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: patch, options: PatchOptions(level: 19))
        let file = try #require(stats.file("places.geojson.gz"))
        #expect(file.encoding == .gzipDelta)
        let byteLevel = try #require(file.tried[.delta])
        // Forty renames scattered through the file: almost every deflate block changes, so a
        // byte-level delta is most of the file; inside the compression it is a few hundred bytes.
        #expect(file.payloadBytes * 20 < byteLevel, "see-through \(file.payloadBytes) B, byte-level \(byteLevel) B")
        #expect(file.payloadBytes * 100 < file.size)
        let out = dir.path("out")
        try PatchApplier.apply(patch: patch, oldTree: dir.path("old"), into: out)
        #expect(try Data(contentsOf: out.appendingPathComponent("places.geojson.gz")) ==
                Data(contentsOf: dir.path("new/places.geojson.gz")))
    }

    @Test func aStreamZlibCannotReproduceStaysAByteLevelDelta() throws {
        let dir = TemporaryDirectory()
        try Self.writeRelease(dir.path("old"), renamed: 0, flushEvery: 50_000)
        try Self.writeRelease(dir.path("new"), renamed: 40, flushEvery: 50_000)
        let patch = dir.path("p.mlpatch")
        let stats = try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: patch, options: PatchOptions(level: 3))
        let file = try #require(stats.file("places.geojson.gz"))
        #expect(file.encoding != .gzipDelta)
        #expect(file.note?.contains("zlib does not reproduce its deflate stream") == true)
        let out = dir.path("out")
        try PatchApplier.apply(patch: patch, oldTree: dir.path("old"), into: out)
        #expect(try Data(contentsOf: out.appendingPathComponent("places.geojson.gz")) ==
                Data(contentsOf: dir.path("new/places.geojson.gz")))
    }

    @Test func aDamagedRecipeFailsTheHashAndLeavesNoFile() throws {
        let dir = TemporaryDirectory()
        try Self.writeRelease(dir.path("old"), renamed: 0)
        try Self.writeRelease(dir.path("new"), renamed: 40)
        let patch = dir.path("p.mlpatch")
        _ = try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: patch, options: PatchOptions(level: 3))
        let opened = try OpenedPatch(url: patch)
        let payload = try #require(opened.manifest.targets.first { $0.path == "places.geojson.gz" }?.origin.payload)
        #expect(payload.encoding == .gzipDelta)
        // The recipe's level byte, 6 → 9: zlib then writes other bytes.
        var bytes = try Data(contentsOf: patch)
        bytes[Int(payload.offset)] = 9
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
