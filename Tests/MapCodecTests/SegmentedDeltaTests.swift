import Foundation
import ManifestServer
import MapPlatform
import MapPublisher
import MapStore
import MapTestSupport
import Testing

@testable import MapLoader

/// Segmented deltas: large files cut into segments, each against a window of the old file,
/// applied with one segment's memory and resumed after the last finished segment.
@Suite struct SegmentedDeltaTests {
    /// A pair of `size` bytes in `dir` (old/, new/) and its patch `p` with segments of `segment` bytes.
    @discardableResult
    static func patchedPair(in dir: TemporaryDirectory, size: Int, segment: Int64) async throws -> PatchStats {
        try LargeFixtures.writePair(old: dir.path("old/planet.bin"), new: dir.path("new/planet.bin"), size: size)
        return try await RawThread.value {
            try PatchBuilder.build(
                from: dir.path("old"), to: dir.path("new"), output: dir.path("p"),
                options: .segmentsOnly(level: 3, segmentLength: segment))
        }
    }

    @Test func aLargeFileIsCutIntoSegmentsAndAppliesByteForByte() async throws {
        let dir = TemporaryDirectory("segmented")
        let stats = try await Self.patchedPair(in: dir, size: 6 << 20, segment: 512 << 10)
        #expect(stats.file("planet.bin")?.encoding == .segmentedDelta)
        #expect(stats.patchBytes < 64 << 10, "patch is \(stats.patchBytes) bytes for a 6 MB file with three edits")
        let applied = try PatchApplier.apply(
            patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out"),
            resumeIn: dir.path("resume"))
        #expect(applied.resumedBytes == 0)
        #expect(try Data(contentsOf: dir.path("out/planet.bin")) == Data(contentsOf: dir.path("new/planet.bin")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("resume").path).isEmpty)
    }

    @Test func aLargeFileWithScatteredEditsGetsTheWholeFileSuffixDeltaWhereSmaller() async throws {
        // A gazetteer-like text above the segment threshold with scattered small edits: the
        // whole-file suffix-array delta pays each edit's bytes and a step, where each
        // segment's zstd frame pays its own tables and the bytes until its long-distance
        // matcher finds the next match (a 187 MB gazetteer: 14.8 kB against 38.4 kB). With
        // estimates, a suffix-array delta that far below a fast zstd delta rules the
        // segments out (most of that publish's time) for the same payload; without, both
        // are made and the segments lose.
        let dir = TemporaryDirectory("segmented-suffix")
        let (old, new) = LargeFixtures.gazetteerPair(size: 6 << 20, overwrites: 8, insertions: 1, seed: 41)
        for (folder, bytes) in [("old", old), ("new", new)] {
            try FileManager.default.createDirectory(at: dir.path(folder), withIntermediateDirectories: true)
            try Data(bytes).write(to: dir.path("\(folder)/places.csv"))
        }
        var files: [Bool: PatchStats.File] = [:]
        for estimates in [true, false] {
            var options = PatchOptions(level: 19, segmentLength: 512 << 10)
            options.wholeRawFileSuffix = true
            options.skipByEstimate = estimates
            let fixed = options
            let patch = dir.path("p-\(estimates)")
            let stats = try await RawThread.value {
                try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: patch, options: fixed)
            }
            let file = try #require(stats.file("places.csv"))
            files[estimates] = file
            let out = dir.path("out-\(estimates)")
            try PatchApplier.apply(patch: patch, oldTree: dir.path("old"), into: out)
            #expect(try Data(contentsOf: out.appendingPathComponent("places.csv")) == Data(new))
        }
        let (ruled, tried) = (try #require(files[true]), try #require(files[false]))
        #expect(ruled.encoding?.isSuffix == true && ruled.encoding == tried.encoding, "\(ruled.tried) \(tried.tried)")
        #expect(ruled.payloadBytes == tried.payloadBytes, "\(ruled.tried) \(tried.tried)")
        #expect(ruled.tried[.segmentedDelta] == nil, "\(ruled.tried)")
        #expect(ruled.note?.contains("the segmented delta skipped: the suffix-array delta") == true, "\(ruled.note ?? "")")
        let segmented = try #require(tried.tried[.segmentedDelta])
        #expect(tried.payloadBytes < segmented, "\(tried.tried)")
    }

    @Test func aSegmentFindsItsOldBytesFarFromItsRelativePosition() async throws {
        // 1 MB of new bytes before a 4 MB old file: most segments' old bytes lie further
        // from the same relative position than a window's margin.
        let dir = TemporaryDirectory("segmented-moved")
        let random = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom"))
        let old = try random.read(upToCount: 4 << 20)!
        let inserted = try random.read(upToCount: 1 << 20)!
        try random.close()
        for (folder, bytes) in [("old", old), ("new", inserted + old)] {
            try FileManager.default.createDirectory(at: dir.path(folder), withIntermediateDirectories: true)
            try bytes.write(to: dir.path("\(folder)/planet.bin"))
        }
        let stats = try await RawThread.value {
            try PatchBuilder.build(
                from: dir.path("old"), to: dir.path("new"), output: dir.path("p"),
                options: .segmentsOnly(level: 3, segmentLength: 512 << 10))
        }
        #expect(stats.file("planet.bin")?.encoding == .segmentedDelta)
        // The inserted megabyte is incompressible; the old 4 MB must cost next to nothing.
        #expect(stats.patchBytes < (1 << 20) + (64 << 10), "patch is \(stats.patchBytes) bytes")
        try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out"))
        #expect(try Data(contentsOf: dir.path("out/planet.bin")) == inserted + old)
    }

    @Test func contentRepeatedInTheOldFileSendsASegmentToItsNewestCopy() throws {
        // Old: release A, then B (A with 1% of its bytes changed); new: C (B with 1% more
        // changed). C's anchors are shared with A and B alike, except B's own changes: the
        // window must go to B, C's nearest ancestor, not to A, its first copy.
        var rng = SeededGenerator(seed: 9)
        let a = (0..<(2 << 20)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        func changed(_ bytes: [UInt8]) -> [UInt8] {
            var out = bytes
            for _ in 0..<(bytes.count / 100) { out[Int(rng.next() % UInt64(out.count))] = UInt8(truncatingIfNeeded: rng.next()) }
            return out
        }
        let b = changed(a)
        let c = changed(b)
        let old = a + b
        let windows = old.withUnsafeBytes { SegmentWindows(old: [$0]) }
        let found = try #require(c.withUnsafeBytes { windows.window(for: $0, length: (2 << 20) + (256 << 10)) })
        #expect(found.file == 0)
        #expect(found.offset > 3 << 19, "window at \(found.offset), B starts at \(2 << 20)")
    }

    @Test func aSegmentGoesToItsOwnCutNotToALargerCutRepeatingItsRecordsInterleaved() throws {
        // A gazetteer's population cuts one after another (as one file, or a folder seen
        // as one sequence): every record of the middle cut is also in the first, in the same
        // order but between others. The first holds every anchor of a segment of the middle
        // cut, the middle cut only the anchors of records no later cut repeats; the window
        // must still go to the middle cut, where the segment is one run.
        var rng = SeededGenerator(seed: 40)
        let records = (0..<16384).map { _ in (0..<256).map { _ in UInt8(truncatingIfNeeded: rng.next()) } }
        let all = records.flatMap { $0 }
        let middle = records.indices.filter { $0 % 4 != 0 }.flatMap { records[$0] }
        let last = records.indices.filter { $0 % 4 == 2 }.flatMap { records[$0] }
        let old = all + middle + last
        let segment = Array(middle[(1 << 20)..<(2 << 20)])
        let length: Int64 = (1 << 20) + (512 << 10)
        let windows = old.withUnsafeBytes { SegmentWindows(old: [$0]) }
        let found = try #require(segment.withUnsafeBytes { windows.window(for: $0, length: length) })
        let source = Int64(all.count + (1 << 20))  // where the segment lies in the old file
        #expect(found.file == 0)
        #expect(
            found.offset <= source && found.offset + length >= source + Int64(segment.count),
            "window \(found.offset)..<\(found.offset + length), segment at \(source)..<\(source + Int64(segment.count))")
    }

    @Test func aRunInTheNextOldFileTakesItsWindowThereNotAtTheEndOfTheOneBefore() throws {
        // Two old files (a cross-file delta's references): the segment is new bytes, then
        // the start of the second file. Its run's centre lies before that file's start;
        // the window must still lie in the second file, where the votes are.
        var rng = SeededGenerator(seed: 42)
        func random(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) } }
        let a = random(4 << 20)
        let b = random(4 << 20)
        let segment = random(1100 << 10) + b[..<(900 << 10)]
        let windows = a.withUnsafeBytes { a in b.withUnsafeBytes { b in SegmentWindows(old: [a, b]) } }
        let found = try #require(segment.withUnsafeBytes { windows.window(for: $0, length: (2 << 20) + (512 << 10)) })
        #expect(found.file == 1 && found.offset == 0, "window in file \(found.file) at \(found.offset)")
    }

    @Test func anApplyThatFailedAtASegmentResumesThereWithoutRedoingTheFinishedOnes() async throws {
        let dir = TemporaryDirectory("segmented")
        try await Self.patchedPair(in: dir, size: 4 << 20, segment: 256 << 10)
        // Fault injected (a fake): the patch's last frame damaged, as in transit (the table,
        // and so the resume identity, unchanged), so the apply stops at the last segment.
        var damaged = try Data(contentsOf: dir.path("p"))
        damaged[damaged.count - 3] ^= 0xFF
        try damaged.write(to: dir.path("damaged"))
        #expect(throws: PatchError.self) {
            try PatchApplier.apply(
                patch: dir.path("damaged"), oldTree: dir.path("old"), into: dir.path("out1"),
                resumeIn: dir.path("resume"))
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path("resume").path)
        #expect(left.contains { $0.hasSuffix(".partial") } && left.contains { $0.hasSuffix(".json") })

        let applied = try PatchApplier.apply(
            patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out2"),
            resumeIn: dir.path("resume"))
        let size = try Data(contentsOf: dir.path("new/planet.bin")).count
        #expect(applied.resumedBytes > Int64(size) / 2, "resumed \(applied.resumedBytes) of \(size) bytes")
        #expect(try Data(contentsOf: dir.path("out2/planet.bin")) == Data(contentsOf: dir.path("new/planet.bin")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("resume").path).isEmpty)
    }

    /// A fresh run checks the whole file's digest, not each segment's: a segment that came
    /// out wrong still fails the apply, and a resumed run does not trust what it left.
    @Test func aWrongSegmentOfAFreshRunIsNeitherKeptNorTrustedOnResume() async throws {
        let dir = TemporaryDirectory("segmented")
        try await Self.patchedPair(in: dir, size: 4 << 20, segment: 256 << 10)
        // Fault injected (a fake): the old file changed in place near its start, so the
        // first segment decodes to wrong bytes.
        let oldFile = dir.path("old/planet.bin")
        let original = try Data(contentsOf: oldFile)
        var changed = original
        changed[1000] ^= 0xFF
        try changed.write(to: oldFile)
        #expect(throws: PatchError.self) {
            try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out1"), resumeIn: dir.path("resume"))
        }
        try original.write(to: oldFile)
        let applied = try PatchApplier.apply(
            patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out2"), resumeIn: dir.path("resume"))
        #expect(applied.resumedBytes == 0)
        #expect(try Data(contentsOf: dir.path("out2/planet.bin")) == Data(contentsOf: dir.path("new/planet.bin")))
    }

    @Test func aCheckpointClaimingMoreThanThePartialHoldsIsNotTrusted() async throws {
        let dir = TemporaryDirectory("segmented")
        try await Self.patchedPair(in: dir, size: 2 << 20, segment: 256 << 10)
        // A checkpoint that claims more than the partial file holds is not trusted.
        let opened = try OpenedPatch(url: dir.path("p"))
        guard case .patch(_, let payload)? = opened.manifest.targets.first?.origin else {
            Issue.record("no patch operation")
            return
        }
        let (table, _) = try SegmentedDelta.decode(
            from: opened.file, at: payload.offset, within: payload.length,
            targetSize: opened.manifest.targets[0].size,
            oldSize: 2 << 20, displayPath: "planet.bin")
        let target = opened.manifest.targets[0]
        let spot = dir.path("resume").path + "/apply-\(target.producedDigest.hex.prefix(24))-\(table.identity.prefix(24))"
        try FileManager.default.createDirectory(at: dir.path("resume"), withIntermediateDirectories: true)
        try Data(repeating: 0, count: 1000).write(to: URL(fileURLWithPath: spot + ".partial"))
        try SegmentCheckpoint(identity: table.identity, source: try #require(opened.manifest.sources[0].sha256).hex, segments: 3)
            .write(spot + ".json")
        let applied = try PatchApplier.apply(
            patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out"),
            resumeIn: dir.path("resume"))
        #expect(applied.resumedBytes == 0)
        #expect(try Data(contentsOf: dir.path("out/planet.bin")) == Data(contentsOf: dir.path("new/planet.bin")))
    }
}
