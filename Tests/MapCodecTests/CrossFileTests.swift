import Foundation
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

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
        let cross: Set<PatchEncoding> = [.crossDelta, .lzmaCrossDelta]  // zstd's or LZMA2's
        #expect(together.files.contains { $0.encoding.map(cross.contains) == true })
        // cities500 holds every city the other cuts hold: with the new cuts produced before it
        // as references, its renames are mostly paid for already (3.0 kB here, against 3.75 kB
        // for its best encoding alone, a sparse suffix-array delta, 5.0 kB before that form,
        // and 10.2 kB for a zstd delta).
        let superset = try #require(together.file("cities500.csv"))
        let single = try #require(alone.file("cities500.csv"))
        #expect(
            superset.encoding.map(cross.contains) == true && superset.payloadBytes * 10 < single.payloadBytes * 9,
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
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path("p"), options: PatchOptions(level: 9))
        }
        guard stats.files.contains(where: { [.crossDelta, .lzmaCrossDelta].contains($0.encoding) }) else {
            Issue.record("no cross-file delta at level 9: \(stats.files.map { "\($0.path) \($0.encoding.map(String.init(describing:)) ?? "-")" })")
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

/// Cross-file deltas of files over 16 MiB: each segment's window lies in one referenced
/// file (mapped, never joined), so a change repeated across large files is paid once too.
@Suite struct SegmentedCrossFileTests {
    @Test func aChangeRepeatedAcrossFilesOver16MiBIsPaidOnce() async throws {
        let dir = TemporaryDirectory("cross-large")
        // a.bin: 17 MiB; b.bin: a.bin and 1 MiB more. The new a.bin has three 64 kB blocks
        // inserted: b.bin alone would pay them again, with a.bin as reference it need not.
        let random = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom"))
        let a = try random.read(upToCount: 17 << 20)!
        let tail = try random.read(upToCount: 1 << 20)!
        var newA = a
        for k in (1...3).reversed() { newA.insert(contentsOf: try random.read(upToCount: 64 << 10)!, at: k * (5 << 20)) }
        try random.close()
        for (folder, first) in [("old", a), ("new", newA)] {
            try FileManager.default.createDirectory(at: dir.path(folder), withIntermediateDirectories: true)
            try first.write(to: dir.path("\(folder)/a.bin"))
            try (first + tail).write(to: dir.path("\(folder)/b.bin"))
        }
        var options = PatchOptions(level: 3, segmentLength: 1 << 20)
        options.wholeCrossFrame = false  // the segmented form (WholeCrossFrameTests has the other)
        let chosen = options
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path("p"), options: chosen)
        }
        let b = try #require(stats.file("b.bin"))
        let alone = try #require(b.tried[.segmentedDelta])
        #expect(b.encoding == .segmentedCrossDelta, "\(b.tried)")
        #expect(b.payloadBytes * 4 < alone, "b.bin: \(b.payloadBytes) B with references, \(alone) B alone")
        let applied = try await RawThread.value {
            try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out"), resumeIn: dir.path("resume"))
        }
        #expect(applied.files.count == 2)
        #expect(try Data(contentsOf: dir.path("out/b.bin")) == newA + tail)
        #expect(try Data(contentsOf: dir.path("out/a.bin")) == newA)
    }

    @Test func aWindowAcrossTwoReferencedFilesIsRefused() throws {
        let dir = TemporaryDirectory("cross-window")
        try Data(repeating: 1, count: 100).write(to: dir.path("one"))
        try Data(repeating: 2, count: 100).write(to: dir.path("two"))
        let files = SegmentOldBytes(files: [
            try MappedFile.source(dir.path("one").path, displayPath: "one"),
            try MappedFile.source(dir.path("two").path, displayPath: "two"),
        ])
        #expect(files.size == 200)
        func segment(_ offset: Int64, _ length: Int64) -> SegmentedDelta.Segment {
            .init(newLength: 1, oldOffset: offset, oldLength: length, frameLength: 1, sha256: SHA256Hash(bytes: [UInt8](repeating: 0, count: 32))!)
        }
        #expect(try Array(files.window(of: segment(100, 100), displayPath: "x")) == Array(repeating: 2, count: 100))
        #expect(try Array(files.window(of: segment(10, 90), displayPath: "x")) == Array(repeating: 1, count: 90))
        #expect(throws: PatchError.self) { try files.window(of: segment(90, 20), displayPath: "x") }
        #expect(throws: PatchError.self) { try files.window(of: segment(150, 51), displayPath: "x") }
    }
}
