import Foundation
import ManifestServer
import MapPlatform
import MapPublisher
import MapStore
import MapTestSupport
import Synchronization
import Testing

@testable import MapLoader

/// See-through deltas of large files: the expansion is cut into segments (memory of one
/// segment, resumable), and the compressed file is rebuilt on several threads.
@Suite struct SeeThroughSegmentedTests {
    /// old/ and new/ trees holding `records.csv.gz`, and their patch `p` with segments of
    /// `segment` bytes (expansions above twice that are segmented).
    @discardableResult
    static func patchedPair(
        in dir: TemporaryDirectory, megabytes: Int, members: Int, segment: Int64, wholeFileSuffix: Bool = false
    ) async throws -> PatchStats {
        try await RawThread.run {
            try LargeFixtures.writeGzip(dir.path("old/records.csv.gz"), megabytes: megabytes, members: members, edits: 0)
            try LargeFixtures.writeGzip(dir.path("new/records.csv.gz"), megabytes: megabytes, members: members, edits: 30)
        }
        return try await RawThread.value {
            try PatchBuilder.build(
                from: dir.path("old"), to: dir.path("new"), output: dir.path("p"),
                options: .comparingEvery(level: 3, segmentLength: segment, wholeFileSuffix: wholeFileSuffix))
        }
    }

    @Test func aLargeExpansionIsSegmentedAndAppliesByteForByte() async throws {
        let dir = TemporaryDirectory("see-through-segmented")
        let stats = try await Self.patchedPair(in: dir, megabytes: 4, members: 1, segment: 256 << 10)
        let file = try #require(stats.file("records.csv.gz"))
        #expect(file.encoding == .segmentedDeflateDelta)
        // Thirty edits and an insertion change almost every deflate block: byte-level, the
        // delta is most of the file; inside the compression it is a few kB.
        let byteLevel = try #require(file.tried[.segmentedDelta])
        #expect(file.payloadBytes * 10 < byteLevel, "see-through \(file.payloadBytes) B, byte-level \(byteLevel) B")
        let reports = Mutex<[Int64]>([])
        let applied = try await RawThread.value {
            try PatchApplier.apply(
                patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out"), resumeIn: dir.path("resume"),
                threads: 2
            ) { done in reports.withLock { $0.append(done) } }
        }
        #expect(applied.resumedBytes == 0)
        // Progress counts target bytes: it never goes back and ends at the tree's size.
        let done = reports.withLock { $0 }
        #expect(done == done.sorted(), "\(done)")
        #expect(done.last == applied.files.reduce(0) { $0 + $1.size })
        #expect(try Data(contentsOf: dir.path("out/records.csv.gz")) == Data(contentsOf: dir.path("new/records.csv.gz")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("resume").path).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("").path).allSatisfy { !$0.contains(".expand-") })
    }

    /// With `wholeFileSuffix` a segmented expansion also gets the suffix delta of the whole expansion
    /// (its decoder needs no segments), and the smaller is kept; both are in the trials,
    /// each under its own encoding, and the kept one applies byte for byte.
    @Test func aSegmentedExpansionAlsoGetsTheWholeExpansionsSuffixDelta() async throws {
        let dir = TemporaryDirectory("see-through-whole-suffix")
        let stats = try await Self.patchedPair(in: dir, megabytes: 4, members: 1, segment: 256 << 10, wholeFileSuffix: true)
        let file = try #require(stats.file("records.csv.gz"))
        let segmented = try #require(file.tried[.segmentedDeflateDelta], "\(file.tried)")
        let suffix = try #require(file.tried[.suffixDeflateDelta], "\(file.tried)")
        #expect(file.encoding == (suffix < segmented ? .suffixDeflateDelta : .segmentedDeflateDelta), "\(file.tried)")
        #expect(file.payloadBytes == min(suffix, segmented))
        try await RawThread.run {
            _ = try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out"), resumeIn: dir.path("resume"))
        }
        #expect(try Data(contentsOf: dir.path("out/records.csv.gz")) == Data(contentsOf: dir.path("new/records.csv.gz")))
    }

    @Test func aThreadCapOfOneGivesTheSameBytesAsManyThreads() async throws {
        let dir = TemporaryDirectory("see-through-threads")
        // Forty members: forty independent deflate streams, rebuilt side by side.
        let stats = try await Self.patchedPair(in: dir, megabytes: 4, members: 40, segment: 256 << 10)
        #expect(stats.file("records.csv.gz")?.encoding == .segmentedDeflateDelta)
        let expected = try Data(contentsOf: dir.path("new/records.csv.gz"))
        var peaks: [Int: Int] = [:]
        for threads in [1, 4] {
            let out = dir.path("out-\(threads)")
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
            let opened = try OpenedPatch(url: dir.path("p"))
            var run = PatchRun(patch: opened, oldRoot: dir.path("old").path, newRoot: out.path, threads: threads, progress: nil)
            for target in opened.manifest.targets { try run.produce(target) }
            peaks[threads] = run.peakRebuildThreads
            #expect(try Data(contentsOf: out.appendingPathComponent("records.csv.gz")) == expected, "\(threads) threads")
        }
        #expect(peaks[1] == 1, "a cap of one ran \(peaks[1] ?? 0) deflates at once")
        #expect((1...4).contains(peaks[4] ?? 0))
    }

    @Test func anApplyThatFailedInTheExpansionResumesAfterItsLastSegment() async throws {
        let dir = TemporaryDirectory("see-through-resume")
        try await Self.patchedPair(in: dir, megabytes: 4, members: 1, segment: 256 << 10)
        // Fault injected (a fake): the patch's last frame damaged, as in transit (the
        // segment table, and so the resume identity, unchanged): the apply stops there.
        var damaged = try Data(contentsOf: dir.path("p"))
        damaged[damaged.count - 3] ^= 0xFF
        try damaged.write(to: dir.path("damaged"))
        #expect(throws: PatchError.self) {
            try PatchApplier.apply(
                patch: dir.path("damaged"), oldTree: dir.path("old"), into: dir.path("out1"), resumeIn: dir.path("resume"))
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path("resume").path)
        #expect(left.contains { $0.hasSuffix(".expansion") } && left.contains { $0.hasSuffix(".json") }, "\(left)")

        let applied = try PatchApplier.apply(
            patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out2"), resumeIn: dir.path("resume"))
        let size = Int64(try Data(contentsOf: dir.path("new/records.csv.gz")).count)
        // Most of the expansion (its share of the file's progress) was taken over.
        #expect(applied.resumedBytes > Int64(Double(size) * PatchRun.expansionShare / 2), "resumed \(applied.resumedBytes) of \(size)")
        #expect(try Data(contentsOf: dir.path("out2/records.csv.gz")) == Data(contentsOf: dir.path("new/records.csv.gz")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("resume").path).isEmpty)
    }

    @Test func aRebuildResumesFromAnyPositionItReported() async throws {
        let dir = TemporaryDirectory("see-through-rebuild")
        let file = dir.path("records.csv.gz")
        try await RawThread.run { try LargeFixtures.writeGzip(file, megabytes: 2, members: 12, edits: 0) }
        // The recipe as the publisher makes it: streams, their expansion, zlib's parameters.
        let streams = DeflateStreams.find(in: file.path)
        #expect(streams.count == 12)
        let lengths = try DeflateRecipe.expand(file.path, streams: streams, into: dir.path("expanded").path)
        let original = try SystemFile.openForReading(file.path)
        let expansion = try SystemFile.openForReading(dir.path("expanded").path)
        var segments: [DeflateRecipe.Segment] = []
        var end: Int64 = 0
        var expanded: Int64 = 0
        for (stream, length) in zip(streams, lengths) {
            expanded += stream.offset - end
            let parameters = try #require(
                DeflateRecipe.parameters(
                    reproducing: original, at: stream.offset, length: stream.length, from: expansion, at: expanded,
                    length: length))
            segments.append(.init(rawBefore: stream.offset - end, expandedLength: length, parameters: parameters))
            expanded += length
            end = stream.offset + stream.length
        }
        let recipe = DeflateRecipe(segments: segments, tail: try original.size() - end)
        var whole: [UInt8] = []
        var positions: [DeflateRecipe.Position] = []
        try recipe.rebuild(from: expansion, threads: 3, output: { whole += $0 }, finished: { positions.append($0) })
        #expect(whole == Array(try Data(contentsOf: file)))
        #expect(positions.count == 13 && positions.last?.output == Int64(whole.count))
        for position in [positions[0], positions[5], positions[11]] {
            var rest: [UInt8] = []
            try recipe.rebuild(from: expansion, threads: 2, at: position, output: { rest += $0 })
            #expect(rest == Array(whole[Int(position.output)...]), "from segment \(position.segments)")
        }
        #expect(throws: PatchError.self) {
            try recipe.rebuild(from: expansion, at: .init(segments: 14, expanded: 0, output: 0), output: { _ in })
        }
    }
}
