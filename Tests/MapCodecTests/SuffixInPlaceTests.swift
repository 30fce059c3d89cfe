import Foundation
import MapModel
import MapPlatform
import MapPublisher
import MapTestSupport
import Testing

@testable import MapDelta

/// A large file's suffix delta is applied as a segmented one is: in place (a clone of the
/// old file where the file system makes clones, CloneTests), checkpointed every few MB in
/// the resume folder, and resumed after a failure by comparing, not rewriting, the bytes
/// an earlier run checkpointed.
@Suite struct SuffixInPlaceTests {
    /// A 12 MB gazetteer-like text (above ``PatchRun/inPlaceSuffixSize``) with scattered
    /// small edits in old/ and new/, and its patch `p`; returns the new bytes.
    static func patchedPair(in dir: TemporaryDirectory) async throws -> (PatchStats, [UInt8]) {
        let (old, new) = LargeFixtures.gazetteerPair(size: 12 << 20, overwrites: 12, insertions: 0, seed: 44)
        for (folder, bytes) in [("old", old), ("new", new)] {
            try FileManager.default.createDirectory(at: dir.path(folder), withIntermediateDirectories: true)
            try Data(bytes).write(to: dir.path("\(folder)/places.csv"))
        }
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path("p"), options: PatchOptions(level: 3))
        }
        return (stats, new)
    }

    /// Applies `patch` with the resume folder; the error, if it failed.
    static func apply(_ patch: URL, in dir: TemporaryDirectory, into out: String) -> ((files: [FileEntry], resumedBytes: Int64)?, (any Error)?) {
        do {
            return (try PatchApplier.apply(patch: patch, oldTree: dir.path("old"), into: dir.path(out), resumeIn: dir.path("resume")), nil)
        } catch {
            return (nil, error)
        }
    }

    @Test func aFailedApplyResumesAfterItsCheckpointAndAFreshOneLeavesNothing() async throws {
        let dir = TemporaryDirectory("suffix-in-place")
        let (stats, new) = try await Self.patchedPair(in: dir)
        let file = try #require(stats.file("places.csv"))
        #expect(file.encoding?.isSuffix == true, "\(file.tried)")
        // The client writes it in place: the plan counts the changed windows, not the file.
        #expect((file.changedInPlace ?? .max) < Int64(new.count) / 4, "\(file.changedInPlace ?? -1)")
        // Fault injected (a fake): the payload's last bytes damaged, as in transit (its head,
        // and so the resume identity, unchanged): the apply stops near the end of the file,
        // after several checkpoints.
        var damaged = try Data(contentsOf: dir.path("p"))
        damaged[damaged.count - 3] ^= 0xFF
        try damaged.write(to: dir.path("damaged"))
        let (_, failure) = Self.apply(dir.path("damaged"), in: dir, into: "out1")
        #expect(failure is PatchError, "\(String(describing: failure))")
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path("resume").path)
        #expect(left.contains { $0.hasSuffix(".partial") } && left.contains { $0.hasSuffix(".json") }, "\(left)")

        let (applied, error) = Self.apply(dir.path("p"), in: dir, into: "out2")
        #expect(error == nil, "\(String(describing: error))")
        #expect((applied?.resumedBytes ?? 0) > Int64(new.count) / 2, "resumed \(applied?.resumedBytes ?? 0) of \(new.count)")
        #expect(try Data(contentsOf: dir.path("out2/places.csv")) == Data(new))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("resume").path).isEmpty)
    }

    /// The bytes before a checkpoint are compared with the partial file, never trusted: a
    /// partial file damaged since (a fake: bytes flipped by the test) still gives the new
    /// file, byte for byte.
    @Test func aPartialFileDamagedSinceItsCheckpointIsRewrittenNotTrusted() async throws {
        let dir = TemporaryDirectory("suffix-in-place-damaged")
        let (_, new) = try await Self.patchedPair(in: dir)
        var damaged = try Data(contentsOf: dir.path("p"))
        damaged[damaged.count - 3] ^= 0xFF
        try damaged.write(to: dir.path("damaged"))
        _ = Self.apply(dir.path("damaged"), in: dir, into: "out1")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path("resume").path)
        let partial = try #require(names.first { $0.hasSuffix(".partial") }, "\(names)")
        let handle = try FileHandle(forUpdating: dir.path("resume/\(partial)"))
        try handle.seek(toOffset: 100_000)
        try handle.write(contentsOf: Data(repeating: 0x21, count: 5000))
        try handle.close()

        let (applied, error) = Self.apply(dir.path("p"), in: dir, into: "out2")
        #expect(error == nil, "\(String(describing: error))")
        #expect((applied?.resumedBytes ?? 0) > 0)
        #expect(try Data(contentsOf: dir.path("out2/places.csv")) == Data(new))
    }
}
