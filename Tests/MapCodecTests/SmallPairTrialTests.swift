import Foundation
import MapDelta
import MapPublisher
import MapTestSupport
import Testing

/// Small pairs (file and old version up to 1 MiB) skip the trials that won nothing or a
/// few bytes on them: plain zstd beside a delta, zstd's worker and deep variants (its
/// long-distance one where another codec's delta is ahead), and the cross-file trial in
/// the codec that lost the single-file trial. On these tiles the bytes stay those of the
/// exhaustive search (``PatchOptions/skipByEstimate`` off).
@Suite struct SmallPairTrialTests {
    /// A tile-like file of 16-byte records (an id, a point, an attribute); `revision` 2
    /// draws three runs of 40 records anew (new features where old ones were), or with
    /// `scattered` gives one attribute in 37 a new value.
    static func tile(seed: UInt64, records: Int, revision: Int, scattered: Bool) -> Data {
        var generator = SeededGenerator(seed: seed)
        var bytes: [UInt8] = []
        for index in 0..<records {
            var x = UInt32(truncatingIfNeeded: generator.next() % 40_000)
            var y = UInt32(truncatingIfNeeded: generator.next() % 40_000)
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
        let (quick, full) = try await PatchBuilder.buildWithAndWithoutEstimates(from: dir.path("r1"), to: dir.path("r2"), in: dir)
        var oneCodec = 0
        for name in ["a.tile", "b.tile", "c.tile"] {
            let file = try #require(quick.file(name))
            let all = try #require(full.file(name))
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

    /// A CSV table of points of interest (as the sample world's `poi.csv`); `revision` 2
    /// renames one row in 50 and moves one in 70.
    static func table(rows: Int, revision: Int) -> Data {
        var generator = SeededGenerator(seed: 41)
        var text = "id,name,category,lat,lon\n"
        for row in 0..<rows {
            let lat = 47.0 + Double(generator.next() % 100_000) / 100_000
            let lon = 9.0 + Double(generator.next() % 300_000) / 100_000
            let category = ["cafe", "museum", "station", "hotel", "park"][Int(generator.next() % 5)]
            let place = generator.next() % 9_000
            let name = revision == 2 && row % 50 == 7 ? "Neu \(row)" : "Ort \(place)"
            let moved = revision == 2 && row % 70 == 3 ? 0.001 : 0
            text += "\(row),\(name),\(category),\(String(format: "%.5f", lat + moved)),\(String(format: "%.5f", lon))\n"
        }
        return Data(text.utf8)
    }

    /// A raster of 2-byte cells of small values (an elevation tile's differences);
    /// `revision` 2 draws four runs of 300 cells anew.
    static func cells(revision: Int) -> Data {
        var generator = SeededGenerator(seed: 5)
        var bytes: [UInt8] = []
        for cell in 0..<20_000 {
            var value = UInt16(truncatingIfNeeded: generator.next() % 24)
            let fresh = UInt16(truncatingIfNeeded: generator.next() % 24)
            if revision == 2, [2_000, 7_000, 12_000, 17_000].contains(where: { ($0..<($0 + 300)).contains(cell) }) { value = fresh }
            withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
        }
        return Data(bytes)
    }

    /// A small pair's long-distance zstd variant runs where the CLI's delta leads the other
    /// codecs' (a table, where a byte can decide: skipping it grew a published patch by
    /// 1 B), and not where one of them is ahead (tiles, LZMA2); the worker variant and the
    /// deep search never run on a small pair.
    @Test func theLongDistanceVariantRunsWhereTheZstdDeltaLeads() throws {
        let dir = TemporaryDirectory("small-pair-variants")
        let pairs: [(String, Data, Data)] = [
            ("table", Self.table(rows: 1_500, revision: 1), Self.table(rows: 1_500, revision: 2)),
            ("tile", Self.cells(revision: 1), Self.cells(revision: 2)),
        ]
        var reach: [String: Bool] = [:]
        for (name, old, new) in pairs {
            let work = dir.path("work-\(name)")
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            try old.write(to: dir.path("\(name).old"))
            try new.write(to: dir.path("\(name).new"))
            let chooser = PayloadChooser(compressor: try ZstdCompressor(), level: 19, workDirectory: work.path)
            let choice = try chooser.choose(newPath: dir.path("\(name).new").path, newSize: Int64(new.count), basePath: dir.path("\(name).old").path)
            let delta = try #require(choice.tried[.delta])
            let others = choice.tried.filter { [.lzmaDelta, .suffixDelta, .filteredSuffixDelta, .sparseSuffixDelta].contains($0.key) }.values
            let leads = delta <= (try #require(others.min()))
            reach[name] = leads
            let ran = FileManager.default.fileExists(atPath: work.appendingPathComponent("delta-ldm.payload").path)
            #expect(ran == leads, "\(name): long-distance variant ran: \(ran), \(choice.tried)")
            for variant in ["delta-worker", "delta-deep"] {
                #expect(!FileManager.default.fileExists(atPath: work.appendingPathComponent("\(variant).payload").path), "\(name): \(variant)")
            }
        }
        #if LZMA
            #expect(reach == ["table": true, "tile": false], "the pairs no longer show both cases (the CLI's delta leads): \(reach)")
        #else
            // Without LZMA2 (an app build) nothing is ahead of the zstd delta on the tile either.
            #expect(reach == ["table": true, "tile": true], "\(reach)")
        #endif
    }
}
