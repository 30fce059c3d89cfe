import Foundation
import Testing
@testable import MapLoader
import MapPublisher

/// Cross-file deltas: a change repeated in several files of a group (a gazetteer cut at
/// several population thresholds) is paid once, the later files referring to the new
/// files the patch already produced.
@Suite struct CrossFileTests {
    /// Writes `cities<threshold>.csv` cuts of one deterministic gazetteer into `root`;
    /// `revision` 2 renames every 37th city and changes its population.
    static func writeGazetteer(_ root: URL, revision: Int) throws {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        var rng = SeededGenerator(seed: 42)
        var rows: [(name: String, population: Int, line: String)] = []
        for id in 0..<30_000 {
            let population = Int(rng.next() % 2_000_000) / (1 + Int(rng.next() % 50))
            var name = "City \(id) \(["North", "South", "Upper", "Lower", "Old", "New"][Int(rng.next() % 6)])"
            var shown = population
            if revision == 2, id % 37 == 0 {
                name += " (renamed)"
                shown += 1000
            }
            let line =
                "\(id)\t\(name)\t\(Double(rng.next() % 180_000) / 1000 - 90)\t\(Double(rng.next() % 360_000) / 1000 - 180)\t\(shown)\tEurope/Berlin\n"
            rows.append((name, population, line))
        }
        for threshold in [500, 1000, 5000, 15000] {
            let text = rows.filter { $0.population > threshold }.map(\.line).joined()
            try Data(text.utf8).write(to: root.appendingPathComponent("cities\(threshold).csv"))
        }
    }

    @Test func aChangeRepeatedAcrossFilesIsPaidOnce() async throws {
        let dir = TemporaryDirectory("cross")
        try Self.writeGazetteer(dir.path("old"), revision: 1)
        try Self.writeGazetteer(dir.path("new"), revision: 2)
        let perFile = { () -> PatchOptions in
            var options = PatchOptions(level: 9)
            options.crossFileReferences = false
            return options
        }()
        let alone = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path("alone"), options: perFile)
        }
        let together = try await RawThread.value {
            try PatchBuilder.build(
                from: dir.path("old"), to: dir.path("new"), output: dir.path("together"),
                options: PatchOptions(level: 9))
        }
        #expect(together.files.contains { $0.encoding == .crossDelta })
        // cities500 holds every city the other cuts hold: with the new cuts produced before it
        // as references, its renames are mostly paid for already (3.0 kB here, against 5.0 kB
        // for its best encoding alone, a suffix-array delta, and 10.2 kB for a zstd delta).
        let superset = try #require(together.file("cities500.csv")), single = try #require(alone.file("cities500.csv"))
        #expect(
            superset.encoding == .crossDelta && superset.payloadBytes * 3 < single.payloadBytes * 2,
            "cities500.csv: \(superset.payloadBytes) B with references, \(single.payloadBytes) B alone")
        #expect(
            together.patchBytes < alone.patchBytes,
            "with references \(together.patchBytes) B, file by file \(alone.patchBytes) B")
        let out = dir.path("out")
        _ = try PatchApplier.apply(patch: dir.path("together"), oldTree: dir.path("old"), into: out)
        for threshold in [500, 1000, 5000, 15000] {
            #expect(
                try Data(contentsOf: out.appendingPathComponent("cities\(threshold).csv"))
                    == Data(contentsOf: dir.path("new/cities\(threshold).csv")))
        }
    }

    @Test func aDamagedReferencedOldFileIsNamed() async throws {
        let dir = TemporaryDirectory("cross")
        try Self.writeGazetteer(dir.path("old"), revision: 1)
        try Self.writeGazetteer(dir.path("new"), revision: 2)
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path("p"), options: PatchOptions(level: 3))
        }
        guard stats.files.contains(where: { $0.encoding == .crossDelta }) else {
            Issue.record("no cross-file delta at level 3")
            return
        }
        // Every old cut damaged the same way: whichever the patch reads, the apply fails
        // and names an old file, never installs a wrong one.
        for threshold in [500, 1000, 5000, 15000] {
            let file = dir.path("old/cities\(threshold).csv")
            var bytes = try Data(contentsOf: file)
            bytes[bytes.count / 2] ^= 0x20
            try bytes.write(to: file)
        }
        do {
            _ = try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out"))
            Issue.record("a patch applied to damaged old files")
        } catch let error as PatchError {
            #expect("\(error)".contains("cities"), "\(error)")
        }
    }
}
