import Foundation
import MapDelta
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// The suffix-array codec (bsdiff class): where numbers shifted by small amounts, its
/// byte differences repeat and compress to almost nothing, which zstd's matching misses.
@Suite struct SuffixDeltaTests {
    /// The 32-byte additions of the decoder give the bytes a one-by-one loop gives, at every
    /// length and offset (a tail shorter than 32 included).
    @Test func addingOldBytesInBlocksMatchesByteByByte() {
        var generator = SeededGenerator(seed: 41)
        let old = (0..<200).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        for length in [0, 1, 31, 32, 33, 64, 95, 130] {
            for offset in [0, 1, 7, 40] {
                let diff = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
                let expected = (0..<length).map { diff[$0] &+ old[offset + $0] }
                var chunk = diff
                chunk.withUnsafeMutableBytes { target in
                    old.withUnsafeBytes { source in SuffixDelta.addBytes(into: target, from: UnsafeRawBufferPointer(rebasing: source[offset...])) }
                }
                #expect(chunk == expected, "length \(length), offset \(offset)")
            }
        }
    }

    /// 20,000 records of a point table: a 4-byte id, a 20-byte name and little-endian
    /// (x, y) coordinates; `revision` 2 moves every point by (+7, −3), as a datum shift
    /// does, and inserts a few records.
    static func writeCoordinates(_ file: URL, revision: Int, records: Int = 20_000) throws {
        var rng = SeededGenerator(seed: 9)
        var bytes: [UInt8] = []
        for index in 0..<records {
            var x = Int32(truncatingIfNeeded: rng.next() % 3_600_000)
            var y = Int32(truncatingIfNeeded: rng.next() % 1_800_000)
            if revision == 2 {
                x &+= 7
                y &-= 3
            }
            withUnsafeBytes(of: UInt32(index).littleEndian) { bytes += $0 }
            bytes += Array(String("place \(index) \(rng.next() % 1000)".prefix(20)).padding(toLength: 20, withPad: " ", startingAt: 0).utf8)
            withUnsafeBytes(of: x.littleEndian) { bytes += $0 }
            withUnsafeBytes(of: y.littleEndian) { bytes += $0 }
            if revision == 2, index % 3_000 == 0 { bytes += Array("new record \(index)".utf8) }
        }
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: file)
    }

    /// A file over 1 MiB whose suffix-array delta is over a fifth below the CLI's zstd
    /// delta gets no long-distance, worker or deep zstd search (each a whole encode), the
    /// publish log says so, and the patch is what the exhaustive search makes.
    @Test func aSuffixDeltaFarAheadSkipsTheOtherZstdSearches() async throws {
        let dir = TemporaryDirectory("suffix")
        try Self.writeCoordinates(dir.path("old/points.bin"), revision: 1, records: 40_000)
        try Self.writeCoordinates(dir.path("new/points.bin"), revision: 2, records: 40_000)
        let (quick, full) = try await PatchBuilder.buildWithAndWithoutEstimates(from: dir.path("old"), to: dir.path("new"), in: dir)
        let file = try #require(quick.file("points.bin"))
        let all = try #require(full.file("points.bin"))
        #expect(file.size > 1 << 20)
        #expect(
            file.note?.contains("the deep search skipped with the long-distance and worker ones") == true, "\(file.note ?? "no note")")
        #expect(all.note?.contains("skipped") != true, "\(all.note ?? "")")
        #expect(file.encoding == all.encoding && file.payloadBytes == all.payloadBytes, "\(file.tried) against \(all.tried)")
    }

    @Test func shiftedCoordinatesPatchSmallerThanZstdAndApplyByteForByte() async throws {
        let dir = TemporaryDirectory("suffix")
        try Self.writeCoordinates(dir.path("old/points.bin"), revision: 1)
        try Self.writeCoordinates(dir.path("new/points.bin"), revision: 2)
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path("p"), options: PatchOptions(level: 9))
        }
        let file = try #require(stats.file("points.bin"))
        #expect(file.encoding?.isSuffix == true, "tried \(file.tried)")
        let zstd = try #require(file.tried[.delta])
        #expect(file.payloadBytes * 4 < zstd, "suffix \(file.payloadBytes) B, zstd delta \(zstd) B")
        _ = try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out"))
        #expect(try Data(contentsOf: dir.path("out/points.bin")) == Data(contentsOf: dir.path("new/points.bin")))
    }

    @Test func aDamagedSuffixPayloadFailsTheHash() async throws {
        let dir = TemporaryDirectory("suffix")
        try Self.writeCoordinates(dir.path("old/points.bin"), revision: 1)
        try Self.writeCoordinates(dir.path("new/points.bin"), revision: 2)
        try await Self.expectDamagedPatchFails(dir, old: "old", new: "new", naming: "points.bin")
    }

    /// Builds the patch from `dir/old` to `dir/new`, flips a bit near its end (in the last
    /// payload) and expects the apply to fail naming `name` (the caller discards the
    /// half-built tree).
    static func expectDamagedPatchFails(_ dir: TemporaryDirectory, old: String, new: String, naming name: String) async throws {
        _ = try await RawThread.value {
            try PatchBuilder.build(from: dir.path(old), to: dir.path(new), output: dir.path("p"), options: PatchOptions(level: 9))
        }
        var bytes = try Data(contentsOf: dir.path("p"))
        bytes[bytes.count - 5] ^= 0x40
        try bytes.write(to: dir.path("p"))
        do {
            _ = try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path(old), into: dir.path("out"))
            Issue.record("a damaged delta of \(name) applied")
        } catch let error as PatchError {
            #expect("\(error)".contains(name), "\(error)")
        }
    }
}
