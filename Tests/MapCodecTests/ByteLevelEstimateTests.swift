import Foundation
import MapDelta
import MapPublisher
import MapTestSupport
import Testing

/// A compressed file whose see-through delta won gets no byte-level trials (whole-file
/// encodes of its compressed bytes) where content-defined anchors say those bytes hold
/// far more than the see-through payload that the old version lacks; where the compressed
/// bytes are mostly the old ones, the trials run.
@Suite struct ByteLevelEstimateTests {
    /// A gzip file (over 4 MiB) of 16-byte records: an id, a point and an attribute.
    /// `revision` 2 moves every point by (+7, −3) and gives one record in ten a new
    /// attribute, which changes every deflate block and costs a see-through delta over
    /// 1/64 of the file (so the rule of 1/64 does not decide); `revision` 3 appends records
    /// only, which leaves all but the last blocks alone.
    static func write(_ file: URL, revision: Int, records count: Int = 550_000) throws {
        var generator = SeededGenerator(seed: 31)
        var bytes: [UInt8] = []
        let records = revision == 3 ? count + count / 55 : count
        bytes.reserveCapacity(records * 16)
        for index in 0..<records {
            var x = Int32(truncatingIfNeeded: generator.next() % 3_600_000)
            var y = Int32(truncatingIfNeeded: generator.next() % 1_800_000)
            var attribute = UInt32(truncatingIfNeeded: generator.next())
            if revision == 2 {
                x &+= 7
                y &-= 3
                if index % 10 == 0 { attribute = attribute &* 2_654_435_761 &+ 1 }
            }
            for value in [UInt32(index), UInt32(bitPattern: x), UInt32(bitPattern: y), attribute] {
                withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
            }
        }
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(try TileArchiveTests.gzip(bytes)).write(to: file)
    }

    @Test func shiftedPointsInsideGzipSkipTheByteLevelTrials() async throws {
        let dir = TemporaryDirectory("byte-level-estimate")
        try Self.write(dir.path("r1/points.bin.gz"), revision: 1)
        try Self.write(dir.path("r2/points.bin.gz"), revision: 2)
        #expect(try #require(FileStatus.of(dir.path("r2/points.bin.gz").path)?.size) >= 4 << 20)
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("r1"), to: dir.path("r2"), output: dir.path("p"), options: PatchOptions(level: 9))
        }
        let file = try #require(stats.file("points.bin.gz"))
        #expect(file.encoding?.parts.view.seesThrough == true, "\(file.encoding) \(file.tried)")
        #expect(file.payloadBytes * 64 > file.size, "\(file.payloadBytes) B of \(file.size) B")
        #expect(file.note?.contains("anchors of the file are not in its old version") == true, "\(file.note ?? "no note")")
        #expect(file.tried[.delta] == nil && file.tried[.zstd] == nil, "\(file.tried)")
        _ = try await RawThread.value { try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("r1"), into: dir.path("out")) }
        #expect(try Data(contentsOf: dir.path("out/points.bin.gz")) == Data(contentsOf: dir.path("r2/points.bin.gz")))
    }

    /// A small file gets the estimate too: the trials of its compressed bytes cost as much
    /// as its see-through delta. 800 records are below 16 kB (a tile's or a small table's
    /// size), where the estimate once had a gate: that case fails if the gate comes back.
    @Test(arguments: [(3_000, 64 << 10, 9), (800, 16 << 10, 19)])
    func aSmallGzipFileWithShiftedPointsSkipsTheByteLevelTrials(records: Int, below: Int64, level: Int) async throws {
        let dir = TemporaryDirectory("byte-level-estimate")
        try Self.write(dir.path("r1/points.bin.gz"), revision: 1, records: records)
        try Self.write(dir.path("r2/points.bin.gz"), revision: 2, records: records)
        #expect(try #require(FileStatus.of(dir.path("r2/points.bin.gz").path)?.size) < below)
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("r1"), to: dir.path("r2"), output: dir.path("p"), options: PatchOptions(level: level))
        }
        let file = try #require(stats.file("points.bin.gz"))
        #expect(file.encoding?.parts.view.seesThrough == true, "\(file.encoding) \(file.tried)")
        #expect(file.note?.contains("anchors of the file are not in its old version") == true, "\(file.note ?? "no note")")
        #expect(file.tried[.delta] == nil && file.tried[.zstd] == nil && file.tried[.lzmaDelta] == nil, "\(file.tried)")
        _ = try await RawThread.value { try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("r1"), into: dir.path("out")) }
        #expect(try Data(contentsOf: dir.path("out/points.bin.gz")) == Data(contentsOf: dir.path("r2/points.bin.gz")))
    }

    @Test func appendedRecordsKeepTheByteLevelTrials() async throws {
        let dir = TemporaryDirectory("byte-level-estimate")
        try Self.write(dir.path("r1/points.bin.gz"), revision: 1)
        try Self.write(dir.path("r2/points.bin.gz"), revision: 3)
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("r1"), to: dir.path("r2"), output: dir.path("p"), options: PatchOptions(level: 9))
        }
        let file = try #require(stats.file("points.bin.gz"))
        #expect(file.note?.contains("byte-level trials skipped") != true, "\(file.note ?? "no note")")
        #expect(file.tried[.delta] != nil, "\(file.tried)")
    }

    /// A file whose see-through payload won gets no cross-file trial of its compressed
    /// bytes, where no estimate ruled out its byte-level trials (records appended: a
    /// see-through delta below 1/64 of the file, which left the cross-file trial to run);
    /// the exhaustive search runs it, and the patch is no larger.
    @Test func aSeeThroughFileGetsNoCrossFileTrial() async throws {
        let dir = TemporaryDirectory("byte-level-estimate")
        for (release, revision) in [("r1", 1), ("r2", 3)] {
            try Self.write(dir.path("\(release)/points.bin.gz"), revision: revision, records: 40_000)
            try Self.write(dir.path("\(release)/more.bin.gz"), revision: revision, records: 2_000)
        }
        let (quick, full) = try await PatchBuilder.buildWithAndWithoutEstimates(from: dir.path("r1"), to: dir.path("r2"), in: dir)
        let file = try #require(quick.file("points.bin.gz"))
        let every = try #require(full.file("points.bin.gz"))
        #expect(file.encoding?.parts.view.seesThrough == true, "\(file.encoding) \(file.tried)")
        #expect(file.note?.contains("anchors of the file") != true, "\(file.note ?? "no note")")
        #expect(file.tried[.crossDelta] == nil && file.tried[.lzmaCrossDelta] == nil, "\(file.tried)")
        #expect(every.tried[.crossDelta] != nil || every.tried[.lzmaCrossDelta] != nil, "\(every.tried)")
        #expect(quick.patchBytes <= full.patchBytes, "\(quick.patchBytes) B against \(full.patchBytes) B")
    }
}
