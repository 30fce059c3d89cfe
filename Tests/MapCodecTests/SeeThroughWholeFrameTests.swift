import Foundation
import MapDelta
import MapPlatform
import MapPublisher
import MapTestSupport
import Testing

/// One zstd frame of a whole large expansion (``PatchOptions/wholeExpansionFrame``): the
/// publisher tries it beside the segments, and the client decodes it in one pass into a
/// mapped file (``ZstdDelta/decodeFrame(_:prefix:into:displayPath:)``), with no window on
/// its heap.
@Suite struct SeeThroughWholeFrameTests {
    /// old/ and new/ holding `records.csv.gz`, one gzip stream of `rows` CSV records (80,000:
    /// about 3.7 MB);
    /// in the new one the two halves of the records trade places and 20 records are edited,
    /// so most records moved 2 MB, beyond a 256 KiB segment's window. Returns the patch's
    /// stats (segments of 256 KiB).
    static func movedRecordsPatch(
        in dir: TemporaryDirectory, wholeExpansionFrame: Bool, estimates: Bool = false, rows: Int = 80000
    ) async throws -> PatchStats {
        try await RawThread.run {
            try FileManager.default.createDirectory(at: dir.path("old"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: dir.path("new"), withIntermediateDirectories: true)
            let script = """
                import gzip, random, sys
                random.seed(5)
                rows = [b"%d,place %d,%.5f,%.5f,%d\\n" % (i, random.randint(0, 99999), random.uniform(-180, 180),
                        random.uniform(-90, 90), random.randint(0, 10**6)) for i in range(\(rows))]
                open(sys.argv[1], "wb").write(gzip.compress(b"".join(rows), compresslevel=6, mtime=0))
                half = len(rows) // 2
                moved = rows[half:] + rows[:half]
                for k in range(20):
                    at = (k * 3989) % len(moved)
                    moved[at] = b"%d,edited %d\\n" % (at, k)
                open(sys.argv[2], "wb").write(gzip.compress(b"".join(moved), compresslevel=6, mtime=0))
                """
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", script, dir.path("old/records.csv.gz").path, dir.path("new/records.csv.gz").path]
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
        var options = PatchOptions.comparingEvery(level: 3, segmentLength: 256 << 10, wholeExpansionFrame: wholeExpansionFrame)
        options.skipByEstimate = estimates
        let chosen = options
        return try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path("p"), options: chosen)
        }
    }

    /// Applies patch `p` into `out` with a `PatchRun` that maps expansions above
    /// `mappedAbove`; returns how many it mapped.
    @discardableResult
    static func apply(_ dir: TemporaryDirectory, into out: String, mappedAbove: Int64, resume: String? = nil) throws -> Int {
        try applied(dir, into: out, mappedAbove: mappedAbove, resume: resume).mapped
    }

    /// ``apply(_:into:mappedAbove:resume:)``, also returning the bytes taken over from an
    /// earlier run.
    static func applied(_ dir: TemporaryDirectory, into out: String, mappedAbove: Int64, resume: String?) throws -> (
        mapped: Int, resumed: Int64
    ) {
        try FileManager.default.createDirectory(at: dir.path(out), withIntermediateDirectories: true)
        let opened = try OpenedPatch(url: dir.path("p"))
        var run = PatchRun(
            patch: opened, oldRoot: dir.path("old").path, newRoot: dir.path(out).path, resume: resume, mappedAbove: mappedAbove,
            progress: nil)
        for target in opened.manifest.targets { try run.produce(target) }
        return (run.mappedFrames, run.resumedBytes)
    }

    @Test func movedRecordsTakeOneFrameWhichAppliesMappedOrStreamed() async throws {
        let dir = TemporaryDirectory("see-through-whole-frame")
        let stats = try await Self.movedRecordsPatch(in: dir, wholeExpansionFrame: true)
        let file = try #require(stats.file("records.csv.gz"))
        let segmented = try #require(file.tried[.segmentedDeflateDelta], "\(file.tried)")
        let whole = try #require(file.tried[.deflateDelta], "\(file.tried)")
        #expect(file.encoding == .deflateDelta, "\(file.tried)")
        // The segments' windows miss the records that moved 2 MB: one frame finds them all.
        #expect(whole * 4 < segmented, "one frame \(whole) B, segments \(segmented) B")
        let expected = try Data(contentsOf: dir.path("new/records.csv.gz"))
        let mapped = try await RawThread.value { try Self.apply(dir, into: "mapped", mappedAbove: 1 << 20) }
        #expect(mapped == 1)
        #expect(try Data(contentsOf: dir.path("mapped/records.csv.gz")) == expected)
        let streamed = try await RawThread.value { try Self.apply(dir, into: "streamed", mappedAbove: ZstdDelta.streamedContentLimit) }
        #expect(streamed == 0)
        #expect(try Data(contentsOf: dir.path("streamed/records.csv.gz")) == expected)
    }

    /// An expansion of 8 MiB or more (``PatchRun/inPlaceSuffixSize``) is built in the resume
    /// folder: once decoded (mapped) it is flushed and checkpointed with its SHA-256, so an
    /// apply that fails in the rebuild after it (an injected `EIO` on the rebuilt file's
    /// first write, a fake) leaves it there, and the next run takes it over.
    @Test func aMappedExpansionIsCheckpointedAndTakenOver() async throws {
        let dir = TemporaryDirectory("see-through-whole-frame-resume")
        let stats = try await Self.movedRecordsPatch(in: dir, wholeExpansionFrame: true, rows: 200_000)
        #expect(stats.file("records.csv.gz")?.encoding == .deflateDelta)
        let resume = dir.path("resume").path
        try FileManager.default.createDirectory(atPath: resume, withIntermediateDirectories: true)
        // The lock's write (its holder's pid) and the checkpoint's pass; the rebuilt file's first write fails.
        let fault = SystemFaults.inject(.init(.write, under: resume, errno: .ioError, passing: 2, times: 1))
        #expect(throws: SystemError.self) { try Self.apply(dir, into: "first", mappedAbove: 1 << 20, resume: resume) }
        SystemFaults.remove(fault)
        let left = try FileManager.default.contentsOfDirectory(atPath: resume)
        #expect(left.contains { $0.hasSuffix(".expansion") } && left.contains { $0.hasSuffix(".json") }, "\(left)")
        let second = try await RawThread.value { try Self.applied(dir, into: "second", mappedAbove: 1 << 20, resume: resume) }
        let size = Int64(try Data(contentsOf: dir.path("new/records.csv.gz")).count)
        #expect(second.mapped == 0, "the expansion was taken over, not decoded again")
        #expect(second.resumed >= Int64(Double(size) * PatchRun.expansionShare) - 1, "resumed \(second.resumed) of \(size)")
        #expect(try Data(contentsOf: dir.path("second/records.csv.gz")) == Data(contentsOf: dir.path("new/records.csv.gz")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: resume).isEmpty)
    }

    /// With estimates on (a publisher's default), the segments are not made where one frame
    /// covers the pair.
    @Test func withEstimatesOneFrameStandsForTheSegments() async throws {
        let dir = TemporaryDirectory("see-through-whole-frame-estimates")
        let stats = try await Self.movedRecordsPatch(in: dir, wholeExpansionFrame: true, estimates: true)
        let file = try #require(stats.file("records.csv.gz"))
        #expect(file.encoding == .deflateDelta, "\(file.tried)")
        #expect(file.tried[.segmentedDeflateDelta] == nil, "\(file.tried)")
        let mapped = try await RawThread.value { try Self.apply(dir, into: "out", mappedAbove: 1 << 20) }
        #expect(mapped == 1)
        #expect(try Data(contentsOf: dir.path("out/records.csv.gz")) == Data(contentsOf: dir.path("new/records.csv.gz")))
    }

    @Test func withoutTheTrialTheExpansionStaysSegmented() async throws {
        let dir = TemporaryDirectory("see-through-whole-frame-off")
        let stats = try await Self.movedRecordsPatch(in: dir, wholeExpansionFrame: false)
        let file = try #require(stats.file("records.csv.gz"))
        #expect(file.encoding == .segmentedDeflateDelta, "\(file.tried)")
        #expect(file.tried[.deflateDelta] == nil)
    }

    /// A full disk when the expansion's blocks are reserved (an injected `ENOSPC`, a fake:
    /// this test does not fill a real disk) fails the apply with that error before a byte is
    /// decoded, instead of a `SIGBUS` on a page the mapping could not write.
    @Test func aFullDiskIsAnErrorBeforeTheMappedDecode() async throws {
        let dir = TemporaryDirectory("see-through-whole-frame-full")
        _ = try await Self.movedRecordsPatch(in: dir, wholeExpansionFrame: true)
        let fault = SystemFaults.inject(.init(.reserve, under: dir.path("").path, errno: .noSpace))
        defer { SystemFaults.remove(fault) }
        #expect {
            try Self.apply(dir, into: "out", mappedAbove: 1 << 20)
        } throws: { error in
            (error as? SystemError)?.isNoSpace == true && (error as? SystemError)?.operation == "reserve"
        }
    }

    /// The one-pass decoder checks the frame before it writes: a frame cut short, bytes
    /// after it, a size other than the target's and a wrong prefix are errors, never a trap.
    @Test func theOnePassDecoderRefusesDamagedFrames() throws {
        let old = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
        var new = old
        new.replaceSubrange(1000..<1010, with: [UInt8](repeating: 42, count: 10))
        let frame = try ZstdFrame.compress(new, level: 3, prefix: old, checksum: false)
        func decode(_ frame: [UInt8], size: Int, prefix: [UInt8]) throws -> [UInt8] {
            var output = [UInt8](repeating: 0, count: size)
            try frame.withUnsafeBytes { frame in
                try prefix.withUnsafeBytes { prefix in
                    try output.withUnsafeMutableBytes { try ZstdDelta.decodeFrame(frame, prefix: prefix, into: $0, displayPath: "f") }
                }
            }
            return output
        }
        #expect(try decode(frame, size: new.count, prefix: old) == new)
        #expect(throws: PatchError.self) { try decode(Array(frame.dropLast(5)), size: new.count, prefix: old) }
        #expect(throws: PatchError.self) { try decode(frame + [0, 1, 2], size: new.count, prefix: old) }
        #expect(throws: PatchError.self) { try decode(frame, size: new.count - 1, prefix: old) }
        #expect(throws: PatchError.self) { try decode(frame, size: new.count + 1, prefix: old) }
        #expect(throws: PatchError.self) { try decode(Array(frame.prefix(3)), size: new.count, prefix: old) }
        let wrongPrefix = try? decode(frame, size: new.count, prefix: [UInt8](repeating: 1, count: old.count))
        #expect(wrongPrefix != new)
    }
}
