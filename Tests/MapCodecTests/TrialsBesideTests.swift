import Foundation
import MapDelta
import MapPlatform
import MapPublisher
import MapTestSupport
import Synchronization
import Testing

/// A large file's (or expansion's) suffix-array delta and deep zstd search, made at once
/// on two cores (`PayloadChooser+Beside.swift`), give the patch made one after the other on
/// one thread, byte for byte: where the suffix-array delta rules the deep search out (the
/// deep search is then left to end on its own) and where it does not.
@Suite(.serialized) struct TrialsBesideTests {
    /// A changed shape of 400,000 CSV records (17.9 MB: above the 16 MiB from which the two
    /// trials run beside each other), as they are or as one gzip stream.
    enum Shape: String, CaseIterable, CustomTestStringConvertible {
        /// A third of the records' last column goes up by one: the suffix-array delta ends
        /// below 55% of a fast zstd delta, which rules the deep search out.
        case recounted
        /// 20,000 new records in the middle: the deep search is made and kept.
        case inserted

        var testDescription: String { rawValue }
    }

    /// Writes old/ and new/ of `shape` in `dir`: `records.csv.gz`, or with `gzip` false
    /// `records.csv`.
    static func write(_ shape: Shape, gzip: Bool, in dir: TemporaryDirectory) async throws {
        try await RawThread.run {
            for side in ["old", "new"] {
                try FileManager.default.createDirectory(at: dir.path(side), withIntermediateDirectories: true)
            }
            let script = """
                import gzip, random, sys
                random.seed(7)
                n = 400000
                rows = [[i, random.randint(0, 99999), random.uniform(-180, 180), random.uniform(-90, 90),
                         random.randint(0, 10**6)] for i in range(n)]
                def csv(rs): return b"".join(b"%d,place %d,%.5f,%.5f,%d\\n" % tuple(r) for r in rs)
                old = csv(rows)
                if sys.argv[3] == "recounted":
                    for r in rows[::3]: r[4] += 1
                    new = csv(rows)
                else:
                    extra = [[n + k, random.randint(0, 99999), random.uniform(-180, 180), random.uniform(-90, 90),
                              random.randint(0, 10**6)] for k in range(20000)]
                    new = csv(rows[:n // 2] + extra + rows[n // 2:])
                pack = (lambda b: gzip.compress(b, compresslevel=6, mtime=0)) if sys.argv[1].endswith(".gz") else bytes
                open(sys.argv[1], "wb").write(pack(old))
                open(sys.argv[2], "wb").write(pack(new))
                """
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "python3", "-c", script, dir.path("old/\(name(gzip))").path, dir.path("new/\(name(gzip))").path, shape.rawValue,
            ]
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
    }

    static func name(_ gzip: Bool) -> String { gzip ? "records.csv.gz" : "records.csv" }

    @Test(arguments: Shape.allCases, [true, false])
    func twoCoresWriteThePatchOneThreadWrites(_ shape: Shape, gzip: Bool) async throws {
        let dir = TemporaryDirectory("trials-beside-\(shape.rawValue)-\(gzip)")
        try await Self.write(shape, gzip: gzip, in: dir)
        var patches: [Int: Data] = [:]
        var notes: [Int: String] = [:]
        // On two threads the deep search is started beside the suffix-array delta, unless
        // other tests' large encodes keep every place (PayloadChooser.largeEncodes) until
        // that delta has ended: each two-thread build waits until no place is held (up to
        // ten minutes), and is made again up to three times.
        var beside = false
        for threads in [1, 2, 2, 2] where threads == 1 || !beside {
            if threads > 1 {
                for _ in 0..<1_200 where PayloadChooser.largeEncodes.held > 0 { try await Task.sleep(for: .milliseconds(500)) }
            }
            let started = PayloadChooser.deepSearchesBeside.load(ordering: .relaxed)
            var options = PatchOptions(level: 16)
            (options.fileJobs, options.segmentJobs) = (threads, threads)
            let fixed = options
            let output = dir.path("patch-\(threads)")
            let stats = try await RawThread.value {
                try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: output, options: fixed)
            }
            let file = try #require(stats.file(Self.name(gzip)))
            // The suffix-array delta wins where it rules the deep search out.
            let expected: PatchEncoding =
                switch (shape, gzip) {
                case (.recounted, true): .suffixDeflateDelta
                case (.inserted, true): .deflateDelta
                case (.recounted, false): .sparseSuffixDelta
                case (.inserted, false): .delta
                }
            #expect(file.encoding == expected, "\(file.tried)")
            notes[threads] = file.note ?? ""
            patches[threads] = try Data(contentsOf: output)
            beside = threads == 2 && PayloadChooser.deepSearchesBeside.load(ordering: .relaxed) > started
        }
        #expect(beside, "the deep search was never started beside the suffix-array delta")
        let skipped = "the deep search skipped: the suffix-array delta"
        #expect(notes[2]!.contains(skipped) == (shape == .recounted), "\(notes[2]!)")
        #expect(notes[1] == notes[2])
        let same = patches[1] == patches[2]  // multi-MB Data: compared into a Bool, not inside #expect
        #expect(same, "\(shape.rawValue): \(patches[1]!.count) B on one thread, \(patches[2]!.count) B on two")
        // The patch made on two threads applies.
        try FileManager.default.createDirectory(at: dir.path("out"), withIntermediateDirectories: true)
        let opened = try OpenedPatch(url: dir.path("patch-2"))
        var run = PatchRun(patch: opened, oldRoot: dir.path("old").path, newRoot: dir.path("out").path, progress: nil)
        for target in opened.manifest.targets { try run.produce(target) }
        let rebuilt = try Data(contentsOf: dir.path("out/\(Self.name(gzip))")) == Data(contentsOf: dir.path("new/\(Self.name(gzip))"))
        #expect(rebuilt)
    }
}
