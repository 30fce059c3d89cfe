import Foundation
import MapDelta
import MapModel
import MapPlatform
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// Tile archives of zstd tiles (PMTiles' header allows them): with
/// ``PatchOptions/zstdFrames`` the publisher finds the frames by a scan, checks that this
/// build's libzstd makes each again byte for byte, and patches inside them
/// (``EncodingParts/View/scannedZstd``); a client of another zstd version is told so.
@Suite struct ZstdTileArchiveTests {
    /// Both revisions of a PMTiles archive of zstd tiles of `level` in `dir/r1` and `dir/r2`.
    static func writeArchives(_ dir: TemporaryDirectory, level: Int) async throws {
        for revision in [1, 2] {
            try FileManager.default.createDirectory(at: dir.path("r\(revision)"), withIntermediateDirectories: true)
            try await RawThread.run {
                try TileArchiveTests.writePMTiles(dir.path("r\(revision)/world.pmtiles"), revision: revision, zstdLevel: level)
            }
        }
    }

    static let withZstdFrames = {
        var options = PatchOptions.comparingEvery(level: 19)
        options.zstdFrames = true
        return options
    }()

    @Test(arguments: [3, 9])
    func aPMTilesArchiveOfZstdTilesIsPatchedInsideItsTiles(level: Int) async throws {
        let dir = TemporaryDirectory("zstd-tiles")
        try await Self.writeArchives(dir, level: level)
        let frames = ZstdFrames.scan(in: dir.path("r2/world.pmtiles").path)
        #expect(frames.count > 500, "\(frames.count) frames: the zstd tiles")
        // zstd tiles of these archives: 3.5 kB inside the tiles, 10.3 kB byte by byte.
        try await TileArchiveTests.expectPatchedInside(
            dir, "world.pmtiles", as: .scannedZstdDelta, options: Self.withZstdFrames, smallerBy: 2)
    }

    @Test func withoutTheOptionTheArchiveIsPatchedByteByByte() async throws {
        let dir = TemporaryDirectory("zstd-tiles-off")
        try await Self.writeArchives(dir, level: 3)
        let stats = try await RawThread.value {
            try PatchBuilder.build(
                from: dir.path("r1"), to: dir.path("r2"), output: dir.path("p"), options: .comparingEvery(level: 19))
        }
        let file = try #require(stats.file("world.pmtiles"))
        #expect(file.encoding?.parts.view.streamCodec != .zstd, "\(file.tried)")
        #expect(PatchCodecs.needed(by: stats.files.compactMap(\.encoding)) == nil)
    }

    /// Frames among noise: a frame is taken whole when it decodes to its end, its checksum
    /// matching; a damaged one and a bare magic number are not. Each is made again at the
    /// level and with the flags that made it.
    @Test func framesAreFoundWholeAndMadeAgainWithTheirParameters() throws {
        let dir = TemporaryDirectory("zstd-frames")
        let content = Array(String(repeating: "{\"type\":\"Feature\",\"name\":\"road\"}", count: 200).utf8)
        try Data(content).write(to: dir.path("content"))
        let contentFile = try SystemFile.openForReading(dir.path("content").path)
        func frame(_ parameters: ZstdFrames.Parameters) throws -> [UInt8] {
            var out: [UInt8] = []
            try ZstdFrames.compress(contentFile, offset: 0, length: Int64(content.count), parameters: parameters) { out += $0 }
            return out
        }
        let plain = ZstdFrames.Parameters(level: 3, checksum: false, contentSize: true)
        let checked = ZstdFrames.Parameters(level: 12, checksum: true, contentSize: true)
        var bytes: [UInt8] = Array(repeating: 7, count: 300) + [0x28, 0xB5, 0x2F, 0xFD, 0, 0, 0]
        let plainAt = bytes.count
        bytes += try frame(plain)
        bytes += Array(repeating: 1, count: 50)
        let checkedAt = bytes.count
        bytes += try frame(checked)
        var damaged = try frame(checked)
        damaged[damaged.count - 2] ^= 0xFF  // its checksum
        bytes += damaged + Array(repeating: 9, count: 20)
        let streams = bytes.withUnsafeBytes { ZstdFrames.scan($0) }
        #expect(streams.map(\.offset) == [Int64(plainAt), Int64(checkedAt)], "\(streams)")
        try Data(bytes).write(to: dir.path("archive"))
        let original = try SystemFile.openForReading(dir.path("archive").path)
        // The parameters found make the frame again (on this content several levels may).
        for (stream, made) in zip(streams, [plain, checked]) {
            let found = try #require(
                ZstdFrames.parameters(
                    reproducing: original, at: stream.offset, length: stream.length, from: contentFile, at: 0,
                    length: Int64(content.count)))
            #expect(found.checksum == made.checksum && found.contentSize == made.contentSize)
            #expect(try frame(found) == Array(bytes[Int(stream.offset)..<Int(stream.offset + stream.length)]))
        }
        // Content the frame does not hold is made into no frame.
        #expect(
            ZstdFrames.parameters(
                reproducing: original, at: streams[0].offset, length: streams[0].length, from: contentFile, at: 1,
                length: Int64(content.count - 1)) == nil)
    }

    /// A frame whose content claims far more than the file may expand to (RLE blocks of
    /// 128 KiB, 4 bytes each: 2 MB of them claim 64 GB) is not decoded to its end: the scan
    /// stops at the file's expansion limit and lists no frame.
    @Test func aFrameThatClaimsMoreThanTheFileMayExpandToStopsTheScan() {
        var bytes: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x58]  // no content size; a 2 MiB window
        let blocks = 500_000
        bytes.reserveCapacity(6 + blocks * 4)
        for index in 0..<blocks {
            let header = UInt32(128 << 10) << 3 | 1 << 1 | (index == blocks - 1 ? 1 : 0)  // an RLE block
            bytes += [UInt8(header & 0xFF), UInt8(header >> 8 & 0xFF), UInt8(header >> 16), 0x41]
        }
        let claimed = Int64(blocks) << 17
        #expect(claimed > DeflateRecipe.expansionLimit(ofFileOfSize: Int64(bytes.count)) * 100)
        #expect(bytes.withUnsafeBytes { ZstdFrames.scan($0) }.isEmpty)
    }

    /// End to end: a site published with zstd frames seen through names the zstd version
    /// for the patch's edge, and a client of that version updates by the patch, over HTTP,
    /// into the publisher's bytes.
    @Test func aSiteNamesTheZstdOfItsPatchAndAClientOfItUpdatesByIt() async throws {
        let site = try TestSite(revisions: [1])
        let (dir, siteFolder) = (site.dir, site.site)
        @Sendable func publish(_ revision: Int, tiles: Int, zstdFrames: Bool) throws {
            let builder = try ReleaseBuilder.make(at: dir.path("r\(revision)"), revision: 1)
            try TileArchiveTests.writePMTiles(
                builder.root.appendingPathComponent("data/de-berlin/base/world.pmtiles"), revision: tiles, zstdLevel: 3)
            var options = PublishOptions(version: "v\(revision)", level: 3, validity: 3600, keyFile: dir.path("publisher.key"))
            options.zstdFrames = zstdFrames
            try Publisher.publish(release: dir.path("r\(revision)"), site: siteFolder, options: options)
        }
        try await RawThread.run { try publish(2, tiles: 1, zstdFrames: false) }
        let loader = site.loader()
        try await loader.install(["de-berlin"])
        try await RawThread.run { try publish(3, tiles: 2, zstdFrames: true) }
        let edges = try site.manifest("v3").root.leaves.flatMap { ($0.artifacts ?? [:]).values.flatMap { $0.patches ?? [] } }
            .filter { $0.from == "v2" }
        #expect(edges.contains { $0.codecs?.contains(PatchCodecs.zstdFrames) == true }, "\(edges.map(\.codecs))")
        let check = try await loader.checkForUpdate()
        #expect(check.plan.steps.contains { $0.method == .delta }, "\(check.plan.steps)")
        try await loader.performUpdate()
        #expect(try await loader.verify().problems.isEmpty)
        #expect(
            try Data(contentsOf: loader.currentFolder.appendingPathComponent("de-berlin/base/world.pmtiles"))
                == Data(contentsOf: site.release(3, "de-berlin", "base").appendingPathComponent("world.pmtiles")))
    }

    /// The recipe names the zstd version that rebuilds its frames; a client that links
    /// another refuses it with what to do, and a site lists the version for the patch.
    @Test func aRecipeOfAnotherZstdVersionIsRefusedAndTheSiteNamesTheVersion() throws {
        let recipe = DeflateRecipe(
            segments: [
                .init(
                    rawBefore: 10, expandedLength: 100, parameters: DeflateParameters(level: 0, memLevel: 1, strategy: 0),
                    zstd: ZstdFrames.Parameters(level: 3, checksum: false, contentSize: true))
            ], tail: 5)
        var columns = recipe.columns
        #expect(try DeflateRecipe(columns: columns, codec: .zstd) == recipe)
        #expect(throws: PatchError.self) { try DeflateRecipe(columns: columns, codec: .deflate) }
        columns[0] ^= 1  // another version
        do {
            _ = try DeflateRecipe(columns: columns, codec: .zstd)
            Issue.record("a recipe of another zstd version was read")
        } catch let error as PatchError {
            #expect("\(error)".contains("full archive"), "\(error)")
        }
        let name = "zstd-frames-" + ZstdFrames.versionName(ZstdFrames.version)
        #expect(PatchCodecs.needed(by: [.scannedZstdDelta, .delta]) == [name])
        #expect(PatchCodecs.available.contains(name))
    }
}
