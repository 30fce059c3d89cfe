import Foundation
import Testing
import MapTestSupport
import MapDelta
import MapPublisher

/// Small pairs (file and old version up to 1 MiB) skip the trials that did not win on
/// them: plain zstd beside a delta, the far-reaching zstd variants, and the cross-file
/// trial in the codec that lost the single-file trial. The bytes stay those of the
/// exhaustive search (``PatchOptions/skipByEstimate`` off).
@Suite struct SmallPairTrialTests {
    /// A tile-like file of 16-byte records (an id, a point, an attribute); `revision` 2
    /// draws three runs of 40 records anew (new features where old ones were), or with
    /// `scattered` gives one attribute in 37 a new value.
    static func tile(seed: UInt64, records: Int, revision: Int, scattered: Bool) -> Data {
        var generator = SeededGenerator(seed: seed)
        var bytes: [UInt8] = []
        for index in 0..<records {
            var x = UInt32(truncatingIfNeeded: generator.next() % 40_000), y = UInt32(truncatingIfNeeded: generator.next() % 40_000)
            var attribute = UInt32(truncatingIfNeeded: generator.next() % 64)
            let fresh = UInt32(truncatingIfNeeded: generator.next() % 64)
            if revision == 2, scattered, index % 37 == 0 { attribute = fresh }
            if revision == 2, !scattered, [300, 900, 1_500].contains(where: { (($0)..<($0 + 40)).contains(index) }) {
                (x, y, attribute) = (x &* 7 % 40_000, y &* 5 % 40_000, attribute ^ 21)
            }
            for value in [UInt32(index), x, y, attribute] { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        }
        return Data(bytes)
    }

    static func release(_ dir: URL, revision: Int) throws {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for (index, name) in ["a.tile", "b.tile", "c.tile"].enumerated() {
            let bytes = tile(seed: UInt64(7 + index), records: 2_000 + 500 * index, revision: revision, scattered: index > 0)
            try bytes.write(to: dir.appendingPathComponent(name))
        }
    }

    @Test func smallPairsSkipLosingTrialsForTheSameBytes() async throws {
        let dir = TemporaryDirectory("small-pair-trials")
        try Self.release(dir.path("r1"), revision: 1)
        try Self.release(dir.path("r2"), revision: 2)
        var options = PatchOptions(level: 19)
        options.skipByEstimate = false
        let exhaustive = options
        let (quick, full) = try await RawThread.value {
            (
                try PatchBuilder.build(from: dir.path("r1"), to: dir.path("r2"), output: dir.path("quick"), options: PatchOptions(level: 19)),
                try PatchBuilder.build(from: dir.path("r1"), to: dir.path("r2"), output: dir.path("full"), options: exhaustive)
            )
        }
        var oneCodec = 0
        for name in ["a.tile", "b.tile", "c.tile"] {
            let file = try #require(quick.file(name)), all = try #require(full.file(name))
            #expect(file.tried[.delta] != nil && file.tried[.zstd] == nil, "\(name): \(file.tried)")
            if let delta = all.tried[.delta], delta * 64 > all.size { #expect(all.tried[.zstd] != nil, "\(name): \(all.tried)") }
            // One codec's cross-file trial, the one whose single-file delta won.
            let single = file.tried.filter { ![.crossDelta, .lzmaCrossDelta].contains($0.key) }
                .min { ($0.value, $0.key.rawValue) < ($1.value, $1.key.rawValue) }
            if single?.key == .delta || single?.key == .lzmaDelta {
                oneCodec += 1
                #expect(file.tried[.crossDelta] == nil || file.tried[.lzmaCrossDelta] == nil, "\(name): \(file.tried)")
            }
            #expect(file.payloadBytes == all.payloadBytes, "\(name): \(file.tried) against \(all.tried)")
        }
        #expect(oneCodec > 0, "no file's single-file delta was zstd's or LZMA2's: \(quick.files.map { "\($0.path) \($0.tried)" })")
        _ = try await RawThread.value { try PatchApplier.apply(patch: dir.path("quick"), oldTree: dir.path("r1"), into: dir.path("out")) }
        for name in ["a.tile", "b.tile", "c.tile"] {
            #expect(try Data(contentsOf: dir.path("out/\(name)")) == Data(contentsOf: dir.path("r2/\(name)")))
        }
    }
}
