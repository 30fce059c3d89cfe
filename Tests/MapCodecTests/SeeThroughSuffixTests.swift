import Foundation
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// See-through deltas whose expansion is a suffix-array delta (``PatchEncoding/suffixDeflateDelta``):
/// shifted coordinates inside a gzip file cost what they cost in a raw file.
@Suite struct SeeThroughSuffixTests {
    /// `dir/r1` and `dir/r2` each hold `points.bin.gz`: the gzip'd point tables of
    /// ``SuffixDeltaTests/writeCoordinates(_:revision:)``, revisions 1 and 2.
    static func pair(in dir: TemporaryDirectory) throws {
        for (revision, release) in [(1, "r1"), (2, "r2")] {
            try SuffixDeltaTests.writeCoordinates(dir.path("raw\(revision)"), revision: revision)
            let gzipped = try TileArchiveTests.gzip(Array(try Data(contentsOf: dir.path("raw\(revision)"))))
            try FileManager.default.createDirectory(at: dir.path(release), withIntermediateDirectories: true)
            try Data(gzipped).write(to: dir.path("\(release)/points.bin.gz"))
        }
    }

    @Test func shiftedCoordinatesInsideGzipGetASuffixExpansionAndApplyByteForByte() async throws {
        let dir = TemporaryDirectory("see-through-suffix")
        try Self.pair(in: dir)
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("r1"), to: dir.path("r2"), output: dir.path("p"), options: PatchOptions(level: 9))
        }
        let file = try #require(stats.file("points.bin.gz"))
        #expect(file.encoding == .suffixDeflateDelta, "tried \(file.tried)")
        // The zstd-frame expansion was tried too, and is several times larger.
        let frame = try #require(file.tried[.deflateDelta], "tried \(file.tried)")
        #expect(file.payloadBytes * 4 < frame, "suffix expansion \(file.payloadBytes) B, zstd frame \(frame) B")
        _ = try await RawThread.value { try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("r1"), into: dir.path("out")) }
        #expect(try Data(contentsOf: dir.path("out/points.bin.gz")) == Data(contentsOf: dir.path("r2/points.bin.gz")))
    }

    /// Where the expansion's suffix-array delta is far below a fast zstd delta of it, the
    /// publish-level zstd delta (most of a small file's publish) is not made, the publish
    /// log says so, and the patch is what the exhaustive search makes.
    @Test func aFarSmallerSuffixExpansionSkipsThePublishLevelZstdDelta() async throws {
        let dir = TemporaryDirectory("see-through-suffix")
        try Self.pair(in: dir)
        let (quick, full) = try await PatchBuilder.buildWithAndWithoutEstimates(from: dir.path("r1"), to: dir.path("r2"), in: dir)
        let file = try #require(quick.file("points.bin.gz"))
        let all = try #require(full.file("points.bin.gz"))
        #expect(file.note?.contains("the level-19 search skipped: the suffix-array delta") == true, "\(file.note ?? "no note")")
        #expect(all.note?.contains("skipped") != true, "\(all.note ?? "")")
        // The fast delta stands for zstd's: larger than the level-19 one, far above the suffix one.
        let fast = try #require(file.tried[.deflateDelta])
        let deep = try #require(all.tried[.deflateDelta])
        #expect(fast >= deep && file.payloadBytes * 100 <= fast * 55, "fast \(fast) B, level 19 \(deep) B, chosen \(file.payloadBytes) B")
        #expect(file.encoding == all.encoding && file.payloadBytes == all.payloadBytes, "\(file.tried) against \(all.tried)")
        _ = try await RawThread.value { try PatchApplier.apply(patch: dir.path("quick"), oldTree: dir.path("r1"), into: dir.path("out")) }
        #expect(try Data(contentsOf: dir.path("out/points.bin.gz")) == Data(contentsOf: dir.path("r2/points.bin.gz")))
    }

    @Test func aDamagedSuffixExpansionFailsNamingTheFile() async throws {
        let dir = TemporaryDirectory("see-through-suffix")
        try Self.pair(in: dir)
        try await SuffixDeltaTests.expectDamagedPatchFails(dir, old: "r1", new: "r2", naming: "points.bin.gz")
    }
}
