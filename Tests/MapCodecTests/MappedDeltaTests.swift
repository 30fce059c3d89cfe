import Foundation
import MapDelta
import MapPlatform
import MapPublisher
import MapTestSupport
import Testing

/// A plain zstd delta of a raw file (``PatchEncoding/delta``) of more than
/// ``PatchRun/mappedAbove`` bytes is decoded in one pass into the new file, mapped, so the
/// apply holds no window as large as the file on its heap; a smaller one streams.
@Suite struct MappedDeltaTests {
    /// `dir/old/r.bin` and `dir/new/r.bin`, 1.3 MB of records with 2% of them changed, and
    /// the patch between them in `dir/p`, its one payload a plain zstd delta (a file of 1 MiB
    /// or more carries its digest, which the decode checks).
    static func build(_ dir: TemporaryDirectory) throws {
        let records = Records.make(count: 30_000, seed: 9)
        Trees.write(records.flatMap { $0 }, "r.bin", in: dir.path("old"))
        Trees.write(Records.mutate(records, fraction: 0.02, seed: 10).flatMap { $0 }, "r.bin", in: dir.path("new"))
        var options = PatchOptions()
        options.lzma = false  // LZMA2 (48 MiB of dictionary at most) streams at any size
        let stats = try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path("p"), options: options)
        #expect(stats.file("r.bin")?.encoding == .delta, "\(stats.file("r.bin")?.tried ?? [:])")
    }

    /// Applies `dir/p` to `dir/old` into `dir/<out>`, mapping frames above `mappedAbove`;
    /// returns how many it mapped (as the cross-file frames' tests do).
    static func apply(_ dir: TemporaryDirectory, out: String, mappedAbove: Int64) throws -> Int {
        try WholeCrossFrameTests.apply(dir, out: out, mappedAbove: mappedAbove)
    }

    @Test func aDeltaAboveTheLimitIsDecodedMappedAndOneBelowStreams() throws {
        let dir = TemporaryDirectory("mapped-delta")
        try Self.build(dir)
        #expect(try Self.apply(dir, out: "mapped", mappedAbove: 64 << 10) == 1)
        #expect(try Self.apply(dir, out: "streamed", mappedAbove: 2 << 20) == 0)
        let expected = try Data(contentsOf: dir.path("new/r.bin"))
        #expect(try Data(contentsOf: dir.path("mapped/r.bin")) == expected)
        #expect(try Data(contentsOf: dir.path("streamed/r.bin")) == expected)
    }

    @Test func aWrongOldFileFailsTheMappedDecodeLeavesNoFileAndNamesIt() throws {
        let dir = TemporaryDirectory("mapped-delta-damaged")
        try Self.build(dir)
        let old = dir.path("old/r.bin")
        var bytes = try Data(contentsOf: old)
        for at in stride(from: 100, to: bytes.count, by: 4096) { bytes[at] ^= 0x20 }
        try bytes.write(to: old)
        do {
            _ = try Self.apply(dir, out: "out", mappedAbove: 64 << 10)
            Issue.record("a delta against a damaged old file was applied")
        } catch let error as PatchError {
            #expect("\(error)".contains("expects old file r.bin"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path("out/r.bin").path))
    }
}
