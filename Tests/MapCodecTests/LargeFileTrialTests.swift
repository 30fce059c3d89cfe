import Foundation
import MapDelta
import MapPublisher
import MapTestSupport
import Testing

/// The trials a large file (over 16 MiB; some rules from 8 MiB) gets: each is a whole-file encode, so those an
/// estimate or a rule rules out are skipped, and the patch notes say so. The estimate
/// that keeps the cross-file trial where it wins is checked in ``CrossFileEstimateTests``
/// and by `SegmentedCrossFileTests`.
@Suite struct LargeFileTrialTests {
    /// 17 MiB of incompressible bytes, and the same with ten 64 KiB changes: a delta above
    /// 1/64 of the file (which alone would not skip plain zstd), far below plain zstd.
    static func pair(in dir: TemporaryDirectory, size: Int = 17 << 20) throws {
        var generator = SeededGenerator(seed: 20)
        var old = [UInt8](repeating: 0, count: size)
        for index in old.indices { old[index] = UInt8(truncatingIfNeeded: generator.next()) }
        var new = old
        for change in 0..<10 {
            let at = (new.count - (64 << 10)) / 10 * change + 1_000
            for offset in 0..<(64 << 10) { new[at + offset] = UInt8(truncatingIfNeeded: generator.next()) }
        }
        // Another file of the kind, unchanged: a cross-file reference that holds nothing new.
        var other = [UInt8](repeating: 0, count: 1 << 20)
        for index in other.indices { other[index] = UInt8(truncatingIfNeeded: generator.next()) }
        for (name, bytes) in [("old", old), ("new", new)] {
            try FileManager.default.createDirectory(at: dir.path(name), withIntermediateDirectories: true)
            try Data(bytes).write(to: dir.path("\(name)/tiles.bin"))
            try Data(other).write(to: dir.path("\(name)/other.bin"))
        }
    }

    /// Builds the patch `old` → `new` of `dir` into `output` at level 16, with the estimates
    /// or (`skipByEstimate` false) every trial.
    static func build(in dir: TemporaryDirectory, output: String, skipByEstimate: Bool = true) async throws -> PatchStats {
        var options = PatchOptions(level: 16)
        options.skipByEstimate = skipByEstimate
        let chosen = options
        return try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path(output), options: chosen)
        }
    }

    /// Applies `patch` of `dir` to its old tree and checks `name` came out as in the new one.
    static func applies(_ patch: String, in dir: TemporaryDirectory, name: String) async throws {
        _ = try await RawThread.value { try PatchApplier.apply(patch: dir.path(patch), oldTree: dir.path("old"), into: dir.path("out")) }
        #expect(try Data(contentsOf: dir.path("out/\(name)")) == Data(contentsOf: dir.path("new/\(name)")))
    }

    @Test func plainZstdAndTheCLIVariantsAreLeftOutOfALargeFilesTrials() async throws {
        let dir = TemporaryDirectory()
        try Self.pair(in: dir)
        let stats = try await Self.build(in: dir, output: "p")
        let file = try #require(stats.file("tiles.bin"))
        #expect(
            [.delta, .suffixDelta, .filteredSuffixDelta, .sparseSuffixDelta].contains(file.encoding) && file.payloadBytes < 1 << 20,
            "\(file.encoding) \(file.payloadBytes) B")
        #expect(file.tried[.delta] != nil, "\(file.tried)")
        #expect(file.tried[.zstd] == nil, "\(file.tried)")
        #expect(file.note?.contains("plain zstd not tried: 4 MiB of samples put it near") == true, "\(file.note ?? "no note")")
        #expect(file.note?.contains("the deep search alone") == true, "\(file.note ?? "no note")")
        // The other file holds none of the new content: no cross-file trial, and the log says why.
        #expect(file.tried[.segmentedCrossDelta] == nil, "\(file.tried)")
        #expect(file.note?.contains("cross-file trial skipped: of ") == true, "\(file.note ?? "no note")")
        try await Self.applies("p", in: dir, name: "tiles.bin")
        // Without estimates every trial runs, and the bytes are no smaller.
        let all = try await Self.build(in: dir, output: "q", skipByEstimate: false)
        let tried = try #require(all.file("tiles.bin"))
        #expect(
            tried.tried[.zstd] != nil && tried.tried[.segmentedCrossDelta] != nil && tried.note == nil,
            "\(tried.tried) \(tried.note ?? "")")
        #expect(tried.payloadBytes >= file.payloadBytes - 1_024, "\(tried.payloadBytes) B with every trial, \(file.payloadBytes) B")
    }

    /// A file of 9 MiB, between the sizes where the trials' rules began before (16 MiB)
    /// and now (8 MiB for the deep search alone and the plain-zstd estimate, 1 MiB for the
    /// cross-file estimate): the same trials are left out as for a 17 MiB file, and the
    /// payload is the one every trial finds.
    @Test func aFileOf9MiBGetsTheLargeFilesRules() async throws {
        let dir = TemporaryDirectory()
        try Self.pair(in: dir, size: 9 << 20)
        let stats = try await Self.build(in: dir, output: "p")
        let file = try #require(stats.file("tiles.bin"))
        let note = file.note ?? "no note"
        #expect(note.contains("the deep search alone (the file or its old version is over 8 MiB)"), "\(note)")
        #expect(file.tried[.zstd] == nil && note.contains("plain zstd not tried: 4 MiB of samples put it near"), "\(file.tried) \(note)")
        #expect(file.tried[.crossDelta] == nil && note.contains("cross-file trial skipped: of "), "\(file.tried) \(note)")
        try await Self.applies("p", in: dir, name: "tiles.bin")
        let all = try await Self.build(in: dir, output: "q", skipByEstimate: false)
        let tried = try #require(all.file("tiles.bin"))
        #expect(tried.tried[.zstd] != nil && tried.tried[.crossDelta] != nil, "\(tried.tried)")
        #expect(tried.payloadBytes >= file.payloadBytes - 1_024, "\(tried.payloadBytes) B with every trial, \(file.payloadBytes) B")
    }

    /// 17 MiB of random bytes whose new version takes 4 MiB of another file of the folder
    /// (unchanged) in place of its own: the one frame over both old files finds them, a
    /// delta from the old version alone pays for all 4 MiB.
    static func borrowing(in dir: TemporaryDirectory) throws {
        var generator = SeededGenerator(seed: 22)
        var old = [UInt8](repeating: 0, count: 17 << 20)
        for index in old.indices { old[index] = UInt8(truncatingIfNeeded: generator.next()) }
        var other = [UInt8](repeating: 0, count: 4 << 20)
        for index in other.indices { other[index] = UInt8(truncatingIfNeeded: generator.next()) }
        var new = old
        new.replaceSubrange((8 << 20)..<(12 << 20), with: other)
        for (name, bytes) in [("old", old), ("new", new)] {
            try FileManager.default.createDirectory(at: dir.path(name), withIntermediateDirectories: true)
            try Data(bytes).write(to: dir.path("\(name)/big.bin"))
            try Data(other).write(to: dir.path("\(name)/other.bin"))
        }
    }

    /// A large file with other files to read gets its one cross-file frame before its own
    /// zstd delta, and where the frame is below 55% of a fast delta the deep search of the
    /// file alone is not run; the payload is the one every trial finds.
    @Test func aCrossFileFrameFarBelowAFastDeltaRulesOutTheDeepSearch() async throws {
        let dir = TemporaryDirectory()
        try Self.borrowing(in: dir)
        let stats = try await Self.build(in: dir, output: "p")
        let file = try #require(stats.file("big.bin"))
        #expect(file.encoding == .wholeCrossDelta, "\(file.encoding) \(file.tried)")
        let note = file.note ?? "no note"
        #expect(note.contains("delta: the deep search skipped: the cross-file frame ("), "\(note)")
        // 4 MiB the base lacks against a frame of a few hundred bytes: no suffix-array delta.
        #expect(note.contains("the suffix-array delta from the base alone skipped: "), "\(note)")
        #expect(!file.tried.keys.contains { $0.isSuffix }, "\(file.tried)")
        let fast = try #require(file.tried[.delta])
        #expect(file.payloadBytes * 100 <= fast * 55, "\(file.payloadBytes) B against a fast delta of \(fast) B")
        try await Self.applies("p", in: dir, name: "big.bin")
        let all = try await Self.build(in: dir, output: "q", skipByEstimate: false)
        let tried = try #require(all.file("big.bin"))
        #expect(tried.payloadBytes == file.payloadBytes, "\(tried.payloadBytes) B with every trial, \(file.payloadBytes) B")
    }

    /// The borrowing file of ``borrowing(in:)`` with a second old file that repeats the
    /// first other file byte for byte: a reference that adds nothing the first does not
    /// hold is left out of the frame (its window and search would only cost time), the
    /// publish log names it, and the patch applies with the header of the references kept.
    @Test func aReferenceThatRepeatsAnotherIsLeftOut() async throws {
        let dir = TemporaryDirectory()
        try Self.borrowing(in: dir)
        for name in ["old", "new"] {
            try FileManager.default.copyItem(at: dir.path("\(name)/other.bin"), to: dir.path("\(name)/copy.bin"))
        }
        let stats = try await Self.build(in: dir, output: "p")
        let file = try #require(stats.file("big.bin"))
        #expect(file.encoding == .wholeCrossDelta, "\(file.encoding) \(file.tried)")
        let note = file.note ?? "no note"
        #expect(note.contains("cross-file references left out: the old ") && note.contains(".bin (adds 0 of "), "\(note)")
        try await Self.applies("p", in: dir, name: "big.bin")
        let all = try await Self.build(in: dir, output: "q", skipByEstimate: false)
        let tried = try #require(all.file("big.bin"))
        #expect(!(tried.note ?? "").contains("left out"), "\(tried.note ?? "")")
        #expect(tried.payloadBytes >= file.payloadBytes - 64, "\(tried.payloadBytes) B with every reference, \(file.payloadBytes) B")
    }

    /// References are weighed largest first: `a.bin` (4 MiB) and `b.bin` (its first MiB)
    /// are new files the patch makes before `c.bin`, which takes all of the new `a.bin` in
    /// place of 4 MiB of its own. `b.bin`, the most recent, comes first in the references,
    /// and weighed first it would add a mebibyte of anchors; after `a.bin` it adds none and
    /// is left out of the frame (a gazetteer cut of 74 MB: a smaller cut whose records a
    /// larger one holds left out, the frame 96.6 s -> 81.2 s and 471 B smaller).
    @Test func aSmallerReferenceThatALargerOneHoldsIsLeftOut() async throws {
        let dir = TemporaryDirectory()
        var generator = SeededGenerator(seed: 23)
        let (old, a) = (generator.bytes(17 << 20), generator.bytes(4 << 20))
        var newA = a
        newA[newA.count - 1] ^= 0xFF
        var new = old
        new.replaceSubrange((8 << 20)..<(12 << 20), with: newA)
        for (name, files) in [("old", [a, Array(a[0..<(1 << 20)]), old]), ("new", [newA, Array(newA[0..<(1 << 20)]) + [7], new])] {
            try FileManager.default.createDirectory(at: dir.path(name), withIntermediateDirectories: true)
            for (file, bytes) in zip(["a.bin", "b.bin", "c.bin"], files) { try Data(bytes).write(to: dir.path("\(name)/\(file)")) }
        }
        let stats = try await Self.build(in: dir, output: "p")
        let file = try #require(stats.file("c.bin"))
        #expect(file.encoding == .wholeCrossDelta, "\(file.encoding) \(file.tried)")
        let note = file.note ?? "no note"
        #expect(note.contains("cross-file references left out: ") && note.contains("the new b.bin (adds 0 of "), "\(note)")
        #expect(!note.contains("the new a.bin ("), "\(note)")
        try await Self.applies("p", in: dir, name: "c.bin")
    }

    /// 17.6 MiB of 16-byte records (an id, a point, an attribute); the new version moves
    /// every point by (+7, −3), as a datum shift does: each record changes, so zstd's matches
    /// stay short, while the suffix-array delta's byte differences repeat.
    static func shifted(in dir: TemporaryDirectory) throws {
        var generator = SeededGenerator(seed: 21)
        var old: [UInt8] = []
        var new: [UInt8] = []
        let records = 1_150_000
        old.reserveCapacity(records * 16)
        new.reserveCapacity(records * 16)
        for index in 0..<records {
            let x = UInt32(truncatingIfNeeded: generator.next() % 3_600_000)
            let y = UInt32(truncatingIfNeeded: generator.next() % 1_800_000)
            let attribute = UInt32(truncatingIfNeeded: generator.next() % 64)
            for value in [UInt32(index), x, y, attribute] { withUnsafeBytes(of: value.littleEndian) { old += $0 } }
            for value in [UInt32(index), x &+ 7, y &- 3, attribute] { withUnsafeBytes(of: value.littleEndian) { new += $0 } }
        }
        for (name, bytes) in [("old", old), ("new", new)] {
            try FileManager.default.createDirectory(at: dir.path(name), withIntermediateDirectories: true)
            try Data(bytes).write(to: dir.path("\(name)/points.bin"))
        }
    }

    @Test func aSuffixDeltaFarBelowAFastDeltaRulesOutTheDeepSearch() async throws {
        let dir = TemporaryDirectory()
        try Self.shifted(in: dir)
        let stats = try await Self.build(in: dir, output: "p")
        let file = try #require(stats.file("points.bin"))
        #expect(file.encoding?.isSuffix == true, "\(file.encoding) \(file.tried)")
        #expect(file.note?.contains("the deep search skipped: the suffix-array delta") == true, "\(file.note ?? "no note")")
        let fast = try #require(file.tried[.delta])
        #expect(file.payloadBytes * 100 <= fast * 55, "\(file.payloadBytes) B against a fast delta of \(fast) B")
        try await Self.applies("p", in: dir, name: "points.bin")
        // With every trial the deep search runs, and it does not win.
        let all = try await Self.build(in: dir, output: "q", skipByEstimate: false)
        let tried = try #require(all.file("points.bin"))
        let deep = try #require(tried.tried[.delta])
        #expect(deep < fast && deep > file.payloadBytes, "deep \(deep) B, fast \(fast) B, suffix \(file.payloadBytes) B")
        #expect(tried.payloadBytes == file.payloadBytes, "\(tried.payloadBytes) B with every trial, \(file.payloadBytes) B")
    }
}
