import Foundation
import MapDelta
import MapModel
import MapPlatform
import MapPublisher
import MapTestSupport
import Testing

/// One zstd frame of a large file against its references joined
/// (``PatchEncoding/wholeCrossDelta``): the publisher tries it beside the segmented
/// cross-file delta, and the client decodes it in one pass into the new file, mapped, or
/// streams it where it cannot map.
@Suite struct WholeCrossFrameTests {
    /// `folder/a.txt` (the even records: 3 MB) and `folder/b.txt` (every record, in order:
    /// 6 MB), 1 kB hex records; in revision 2 every 50th even record is rewritten in both
    /// files. The new b.txt then reads its unchanged records from the old b.txt and its
    /// rewritten ones from the new a.txt: one segment's window lies in one of them, one
    /// frame reaches both. (Segments of 1 MiB make both files large ones.)
    static func writeCuts(_ folder: URL, revision: Int, records: Int = 6000) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let hex = Array("0123456789abcdef".utf8)
        var rng = SeededGenerator(seed: 7)
        var edits = SeededGenerator(seed: 8)
        var a: [UInt8] = []
        var b: [UInt8] = []
        a.reserveCapacity(records * 513)
        b.reserveCapacity(records * 1025)
        for index in 0..<records {
            var line: [UInt8] = []
            line.reserveCapacity(1025)
            let rewritten = revision == 2 && index % 100 == 0
            for _ in 0..<64 {
                let word = rng.next()
                let shown = rewritten ? edits.next() : word
                for shift in stride(from: 60, through: 0, by: -4) { line.append(hex[Int((shown >> UInt64(shift)) & 15)]) }
            }
            line.append(UInt8(ascii: "\n"))
            if index % 2 == 0 { a += line }
            b += line
        }
        try Data(a).write(to: folder.appendingPathComponent("a.txt"))
        try Data(b).write(to: folder.appendingPathComponent("b.txt"))
    }

    /// The patch old → new in `dir/p`, its cuts written first; segments of 1 MiB.
    static func build(in dir: TemporaryDirectory, options: PatchOptions) async throws -> PatchStats {
        try writeCuts(dir.path("old"), revision: 1)
        try writeCuts(dir.path("new"), revision: 2)
        return try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path("p"), options: options)
        }
    }

    /// Applies `dir/p` into `dir/out` with a `PatchRun` that maps frames above `mappedAbove`;
    /// returns how many it mapped.
    static func apply(_ dir: TemporaryDirectory, out: String, mappedAbove: Int64) throws -> Int {
        try FileManager.default.createDirectory(at: dir.path(out), withIntermediateDirectories: true)
        let opened = try OpenedPatch(url: dir.path("p"))
        var run = PatchRun(
            patch: opened, oldRoot: dir.path("old").path, newRoot: dir.path(out).path, mappedAbove: mappedAbove, progress: nil)
        for target in opened.manifest.targets { try run.produce(target) }
        return run.mappedFrames
    }

    @Test func recordsFromTwoReferencesTakeOneFrameWhichAppliesMappedOrStreamed() async throws {
        let dir = TemporaryDirectory("whole-cross")
        let stats = try await Self.build(
            in: dir, options: .comparingEvery(level: 3, segmentLength: 1 << 20, wholeCrossFrame: true))
        let b = try #require(stats.file("b.txt"))
        let whole = try #require(b.tried[.wholeCrossDelta], "\(b.tried)")
        let segmented = try #require(b.tried[.segmentedCrossDelta], "\(b.tried)")
        #expect(b.encoding == .wholeCrossDelta, "\(b.tried)")
        // A segment reads either the old b.txt (the rewritten records are new there) or the
        // new a.txt (the odd records are missing there); one frame reads both.
        #expect(whole * 3 < segmented, "b.txt: one frame \(whole) B, segments \(segmented) B")
        // The client joins b.txt's references (the new a.txt and the old b.txt at least) in a
        // scratch file while it writes b.txt: the plan's disk estimate counts them.
        let written = stats.files.filter { $0.operation == .add || $0.operation == .patch }.reduce(Int64(0)) { $0 + $1.size }
        let references = try [dir.path("new/a.txt"), dir.path("old/b.txt")].reduce(Int64(0)) {
            $0 + Int64(try Data(contentsOf: $1).count)
        }
        #expect(stats.writeBytes >= written + references, "writes \(stats.writeBytes) B: files \(written) B, references \(references) B")
        #expect(try Self.apply(dir, out: "mapped", mappedAbove: 1 << 20) >= 1)
        #expect(try Self.apply(dir, out: "streamed", mappedAbove: .max) == 0)
        let expected = try Data(contentsOf: dir.path("new/b.txt"))
        #expect(try Data(contentsOf: dir.path("mapped/b.txt")) == expected)
        #expect(try Data(contentsOf: dir.path("streamed/b.txt")) == expected)
        #expect(try Data(contentsOf: dir.path("mapped/a.txt")) == Data(contentsOf: dir.path("new/a.txt")))
    }

    @Test func withEstimatesOneFrameStandsForTheSegments() async throws {
        let dir = TemporaryDirectory("whole-cross-estimates")
        let stats = try await Self.build(in: dir, options: PatchOptions(level: 3, segmentLength: 1 << 20))
        let b = try #require(stats.file("b.txt"))
        #expect(b.encoding == .wholeCrossDelta, "\(b.tried)")
        #expect(b.tried[.segmentedCrossDelta] == nil, "\(b.tried)")
        _ = try await RawThread.value {
            try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out"))
        }
        #expect(try Data(contentsOf: dir.path("out/b.txt")) == Data(contentsOf: dir.path("new/b.txt")))
    }

    @Test func withTheTrialOffTheFileStaysSegmented() async throws {
        let dir = TemporaryDirectory("whole-cross-off")
        var options = PatchOptions(level: 3, segmentLength: 1 << 20)
        options.wholeCrossFrame = false
        let stats = try await Self.build(in: dir, options: options)
        let b = try #require(stats.file("b.txt"))
        #expect(b.tried[.wholeCrossDelta] == nil && b.encoding != .wholeCrossDelta, "\(b.tried)")
    }

    @Test func aDamagedReferenceFailsTheMappedDecodeAndNamesAnOldFile() async throws {
        let dir = TemporaryDirectory("whole-cross-damaged")
        _ = try await Self.build(in: dir, options: PatchOptions(level: 3, segmentLength: 1 << 20))
        try FileManager.default.createDirectory(at: dir.path("out"), withIntermediateDirectories: true)
        let opened = try OpenedPatch(url: dir.path("p"))
        var run = PatchRun(
            patch: opened, oldRoot: dir.path("old").path, newRoot: dir.path("out").path, mappedAbove: 1 << 20, progress: nil)
        var failed: [String] = []
        var mappedBefore = 0
        for target in opened.manifest.targets {
            if target.path == "b.txt" {
                mappedBefore = run.mappedFrames
                // The old files damaged every 4 kB once a.txt is made: whichever b.txt's frame
                // reads, its bytes are wrong, the mapped file is removed and the error names
                // an old file.
                for name in ["a.txt", "b.txt"] {
                    let file = dir.path("old/\(name)")
                    var bytes = try Data(contentsOf: file)
                    for at in stride(from: 100, to: bytes.count, by: 4096) { bytes[at] ^= 0x20 }
                    try bytes.write(to: file)
                }
            }
            do {
                try run.produce(target)
            } catch let error as PatchError {
                failed.append(target.path)
                #expect("\(error)".contains("expects old file"), "\(error)")
            }
        }
        #expect(failed == ["b.txt"])
        #expect(run.mappedFrames == mappedBefore + 1, "b.txt was not decoded mapped")
        #expect(!FileManager.default.fileExists(atPath: dir.path("out/b.txt").path))
    }

    @Test func aFrameDeclaringAnotherSizeIsRefusedBeforeTheFileIsMade() async throws {
        let dir = TemporaryDirectory("whole-cross-size")
        _ = try await Self.build(in: dir, options: PatchOptions(level: 3, segmentLength: 1 << 20))
        let opened = try OpenedPatch(url: dir.path("p"))
        let target = try #require(opened.manifest.targets.first { $0.path == "b.txt" })
        guard case .patch(_, let payload) = target.origin, payload.encoding == .wholeCrossDelta else {
            Issue.record("b.txt is not a whole cross-file frame: \(target.origin)")
            return
        }
        // The frame header's content size (RFC 8878, 3.1.1.1), its lowest byte plus one.
        let (references, headerLength) = try CrossReferences.decode(
            from: opened.file, at: payload.offset, within: payload.length, displayPath: "b.txt")
        #expect(references.references.count >= 2)
        var bytes = try Data(contentsOf: dir.path("p"))
        let frameStart = Int(payload.offset + headerLength)
        let descriptor = bytes[frameStart + 4]
        let singleSegment = descriptor & 0x20 != 0
        #expect(descriptor >> 6 == 2, "a 6 MB file's size takes 4 bytes")
        let at = frameStart + 5 + (singleSegment ? 0 : 1) + [0, 1, 2, 4][Int(descriptor & 3)]
        #expect(bytes[at..<(at + 4)].reversed().reduce(0) { $0 << 8 | Int($1) } == Int(target.size))
        bytes[at] &+= 1
        try bytes.write(to: dir.path("p"))
        do {
            _ = try Self.apply(dir, out: "out", mappedAbove: 1 << 20)
            Issue.record("a frame declaring another size was decoded")
        } catch let error as PatchError {
            #expect("\(error)".contains("b.txt"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path("out/b.txt").path))
    }
}

/// A whole cross-file frame a compromised publisher could sign.
@Suite struct HostileWholeCrossFrameTests {
    @Test func aFrameForAFileOver256MiBIsRefusedBeforeAnythingIsWritten() throws {
        let dir = TemporaryDirectory("whole-cross-hostile")
        try FileManager.default.createDirectory(at: dir.path("old"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: dir.path("new"), withIntermediateDirectories: true)
        try Data(repeating: 1, count: 4096).write(to: dir.path("old/a.txt"))
        let payload = CrossReferences(references: [.old(0)]).encoded + (try ZstdFrame.compress([0, 1, 2], level: 3))
        let target = PatchManifest.Target(
            path: "b.txt", size: 300 << 20, sha256: SHA256Hash(bytes: [UInt8](repeating: 7, count: 32)),
            origin: .patch(source: 0, .init(encoding: .wholeCrossDelta, length: Int64(payload.count))))
        let manifest = PatchManifest(
            sources: [.init(path: "a.txt", sha256: nil)], targets: [target], deletions: [], treeHash: nil, keepsUnlisted: true)
        try HostilePatch.write(manifest, payloads: payload, to: dir.path("p"))
        let opened = try OpenedPatch(url: dir.path("p"))
        var run = PatchRun(patch: opened, oldRoot: dir.path("old").path, newRoot: dir.path("new").path, progress: nil)
        do {
            try run.produce(try #require(opened.manifest.targets.first))
            Issue.record("a 300 MiB whole cross-file frame was decoded")
        } catch let error as PatchError {
            #expect("\(error)".contains("more than 256 MiB"), "\(error)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("new").path).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == ["new", "old", "p"])
    }
}
