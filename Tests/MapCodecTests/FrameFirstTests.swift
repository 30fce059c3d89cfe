import Foundation
import MapDelta
import MapPlatform
import MapPublisher
import MapTestSupport
import Testing

/// A file over 8 MiB (here over the segment threshold too) that repeats another file of its
/// folder gets its cross-file frame first (``TrialRule/crossFrameFirst``), and the frame
/// rules out its segments, as the suffix-array delta can: a 74 MB gazetteer cut spent 76 s
/// on segments of 1.20 MB beside its 231 kB frame. On two threads the suffix-array delta
/// is made beside the frame, and stopped where the frame rules it out
/// (``TrialRule/baseLacksWhatTheFrameMatched``). One thread and two give the same patch.
@Suite(.serialized) struct FrameFirstTests {
    /// How the new release changes the records.
    enum Shape: String, CaseIterable, CustomTestStringConvertible {
        /// 3% of the records, anywhere, grow over the cut, 0.5% fall under it and 1% get a
        /// new name: the suffix-array delta from the base alone is made (the base lacks
        /// about seven times the frame).
        case scattered
        /// 20 runs of 300 neighbouring records grow over the cut: the base lacks over 64
        /// times what the frame pays, and the suffix-array delta is left out.
        case grownRegions

        var testDescription: String { rawValue }
    }

    /// Writes old/ and new/ of `shape` in `dir`: `all.csv`, every record of a gazetteer
    /// (about 34 MB; records of 230 B, as long as a city's with its names), and `big.csv`,
    /// the records whose population is over `cut` of a million (about 18 MB at the
    /// default). Every record the new `big.csv` lacks in its old version is in the new
    /// `all.csv`.
    static func write(_ shape: Shape, cut: Int = 450_000, in dir: TemporaryDirectory) async throws {
        try await RawThread.run {
            for side in ["old", "new"] {
                try FileManager.default.createDirectory(at: dir.path(side), withIntermediateDirectories: true)
            }
            let script = """
                import random, sys
                random.seed(11)
                n, cut = 145000, int(sys.argv[4])
                rows = [[i, "%0192x" % random.getrandbits(768), random.uniform(-180, 180), random.uniform(-90, 90),
                         random.randint(0, 10**6)] for i in range(n)]
                def write(folder):
                    line = lambda r: b"%d,%s,%.5f,%.5f,%d\\n" % (r[0], r[1].encode(), r[2], r[3], r[4])
                    open(folder + "/all.csv", "wb").write(b"".join(line(r) for r in rows))
                    open(folder + "/big.csv", "wb").write(b"".join(line(r) for r in rows if r[4] > cut))
                write(sys.argv[1])
                if sys.argv[3] == "scattered":
                    small = [r for r in rows if r[4] <= cut]
                    large = [r for r in rows if r[4] > cut]
                    for r in random.sample(small, n * 3 // 100): r[4] = random.randint(cut + 1, 10**6)
                    for r in random.sample(large, n // 200): r[4] = random.randint(0, cut)
                    for r in random.sample(rows, n // 100): r[1] = "%0192x" % random.getrandbits(768)
                else:
                    for start in random.sample(range(0, n - 300, 300), 20):
                        for r in rows[start:start + 300]: r[4] = max(r[4], random.randint(cut + 1, 10**6))
                write(sys.argv[2])
                """
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", script, dir.path("old").path, dir.path("new").path, shape.rawValue, "\(cut)"]
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
    }

    @Test(arguments: Shape.allCases)
    func theFrameRulesOutTheSegmentsOfAFileOverTheThreshold(_ shape: Shape) async throws {
        let dir = TemporaryDirectory("frame-first-\(shape.rawValue)")
        try await Self.write(shape, in: dir)
        let size = try #require(FileStatus.of(dir.path("new/big.csv").path)?.size)
        #expect(size > 16 << 20, "big.csv: \(size) B")
        var patches: [Int: Data] = [:]
        var notes: [Int: String] = [:]
        for threads in [1, 2] {
            let (started, stopped) = (
                PayloadChooser.suffixTrialsBesideFrame.load(ordering: .relaxed),
                PayloadChooser.suffixTrialsStoppedBeside.load(ordering: .relaxed)
            )
            // Segments of 4 MiB: big.csv is far over the threshold (8 MiB), as a 74 MB cut
            // is over the default one.
            let (big, patch) = try await Self.patch(dir, shape, threads: threads, options: PatchOptions(level: 3, segmentLength: 4 << 20))
            let note = big.note ?? ""
            #expect(big.encoding == .wholeCrossDelta, "\(big.tried)")
            #expect(big.tried[.segmentedDelta] == nil, "segments made: \(big.tried)")
            #expect(note.contains("the segmented delta skipped: the cross-file frame"), "\(note)")
            if threads > 1 {
                #expect(PayloadChooser.suffixTrialsBesideFrame.load(ordering: .relaxed) > started, "not made beside the frame")
                if shape == .grownRegions {
                    #expect(PayloadChooser.suffixTrialsStoppedBeside.load(ordering: .relaxed) > stopped, "not stopped")
                }
            }
            patches[threads] = patch
            notes[threads] = note
        }
        let samePatch = patches[1] == patches[2]
        #expect(samePatch, "one thread: \(patches[1]?.count ?? 0) B, two: \(patches[2]?.count ?? 0) B")
        #expect(notes[1] == notes[2])
    }

    /// A file of 8-16 MiB gets its frame first too (a 15 MB gazetteer cut spent 11.8 s on
    /// its own deep search beside a frame of a sixth of its size): the small file's zstd
    /// frame (``PatchEncoding/crossDelta``), which is the rival of its own zstd delta. At
    /// level 3 that rival rules out the delta's variants (the frame's length is in the
    /// note), and where the base lacks far more than the frame pays, the suffix-array delta
    /// is left out. The default segment threshold (64 MiB) keeps the file whole.
    @Test(arguments: Shape.allCases)
    func aFileOfEightToSixteenMebibytesGetsItsFrameFirst(_ shape: Shape) async throws {
        let dir = TemporaryDirectory("frame-first-small-\(shape.rawValue)")
        try await Self.write(shape, cut: 600_000, in: dir)
        let size = try #require(FileStatus.of(dir.path("new/big.csv").path)?.size)
        #expect(size > 8 << 20 && size <= 16 << 20, "big.csv: \(size) B")
        var patches: [Int: Data] = [:]
        for threads in [1, 2] {
            let (big, patch) = try await Self.patch(dir, shape, threads: threads, options: PatchOptions(level: 3))
            let note = big.note ?? ""
            let frame = try #require(big.tried[.crossDelta], "no frame: \(big.tried)")
            #expect(big.encoding == .crossDelta, "\(big.tried)")
            #expect(note.contains("another codec's delta (\(frame) B)"), "the frame was not the delta's rival: \(note)")
            patches[threads] = patch
        }
        let samePatch = patches[1] == patches[2]
        #expect(samePatch, "one thread: \(patches[1]?.count ?? 0) B, two: \(patches[2]?.count ?? 0) B")
    }

    /// The patch of `dir` (written in `shape`) made with `options` on `threads` threads:
    /// `big.csv`'s decision and the patch's bytes. Checks that the suffix-array delta from
    /// the base alone is made in the scattered shape and left out (and said so) in the
    /// other, and that the patch rebuilds the new `big.csv`.
    static func patch(_ dir: TemporaryDirectory, _ shape: Shape, threads: Int, options: PatchOptions) async throws -> (
        big: PatchStats.File, bytes: Data
    ) {
        var options = options
        (options.fileJobs, options.segmentJobs) = (threads, threads)
        let (fixed, output) = (options, dir.path("patch-\(threads)"))
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: output, options: fixed)
        }
        let big = try #require(stats.file("big.csv"))
        let note = big.note ?? ""
        let suffixMade = big.tried.keys.contains { $0.parts.codec.suffixForm != nil }
        let suffixLeftOut = note.contains("the suffix-array delta from the base alone skipped")
        #expect(suffixMade == (shape == .scattered) && suffixLeftOut == (shape == .grownRegions), "\(note): \(big.tried)")
        let into = dir.path("out-\(threads)")
        _ = try await RawThread.value { try PatchApplier.apply(patch: output, oldTree: dir.path("old"), into: into) }
        let rebuilt = try Data(contentsOf: into.appendingPathComponent("big.csv"))
        let same = rebuilt == (try Data(contentsOf: dir.path("new/big.csv")))
        #expect(same, "big.csv rebuilt from the \(threads)-thread patch differs")
        return (big, try Data(contentsOf: output))
    }
}
