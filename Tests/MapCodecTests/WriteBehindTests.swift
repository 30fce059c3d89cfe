import Crypto
import Foundation
import MapDelta
import MapPlatform
import MapPublisher
import MapTestSupport
import Testing

/// A new file hashed and written on a second thread (`HashingFileWriter(writeBehind:)`):
/// the same bytes and digest as on one thread, and a failed write still reported.
@Suite struct WriteBehindTests {
    /// 9.3 MB in chunks of odd sizes (1 B to 3 MiB), so slots fill across chunk ends.
    static func chunks() -> [[UInt8]] {
        var rng = SeededGenerator(seed: 5)
        var out: [[UInt8]] = []
        for size in [1, 4095, 1 << 20, 3 << 20, 17, (1 << 20) - 1, 5_000_000] {
            out.append((0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        }
        return out
    }

    @Test(arguments: [false, true])
    func theBytesAndDigestDoNotDependOnTheThread(writeBehind: Bool) throws {
        let dir = TemporaryDirectory("behind")
        let chunks = Self.chunks()
        let all = chunks.flatMap { $0 }
        let path = dir.path("out").path
        let writer = try HashingFileWriter(path: path, displayPath: "out", limit: Int64(all.count), writeBehind: writeBehind)
        for chunk in chunks { try chunk.withUnsafeBytes { try writer.write($0) } }
        let (digest, size) = try writer.finish()
        #expect(size == Int64(all.count))
        #expect(digest.hex == SHA256.hash(data: all).map { String(format: "%02x", $0) }.joined())
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(all))
    }

    /// A full disk (a real 2 MB tmpfs) fails the write on the second thread; the error
    /// reaches the caller, by a later `write` or by `finish`.
    @Test(.enabled(if: ReadOnlyMount.available, "needs mount(2) for a small tmpfs"))
    func aFullDiskIsReportedFromTheSecondThread() throws {
        let mount = try ReadOnlyMount(size: "2m")
        defer { mount.unmount() }
        let writer = try HashingFileWriter(
            path: mount.url.appendingPathComponent("out").path, displayPath: "out", limit: 64 << 20, writeBehind: true)
        let chunk = [UInt8](repeating: 7, count: 1 << 20)
        #expect {
            for _ in 0..<16 { try chunk.withUnsafeBytes { try writer.write($0) } }
            _ = try writer.finish()
        } throws: { error in
            (error as? SystemError)?.isNoSpace == true
        }
    }

    /// Writes `old/grid.bin` (`size` bytes of small random numbers) and `new/grid.bin` (one
    /// byte in `every` raised by `by`) under `dir`; returns the new bytes.
    static func grids(in dir: TemporaryDirectory, seed: UInt64, size: Int, every: Int, by step: UInt8) throws -> [UInt8] {
        var rng = SeededGenerator(seed: seed)
        var old = [UInt8](repeating: 0, count: size)
        for index in old.indices { old[index] = UInt8(truncatingIfNeeded: rng.next() % 16) }
        var new = old
        for index in stride(from: every % 2_000 + 1_000, to: new.count, by: every) { new[index] &+= step }
        for (name, bytes) in [("old", old), ("new", new)] {
            try FileManager.default.createDirectory(at: dir.path(name), withIntermediateDirectories: true)
            try Data(bytes).write(to: dir.path("\(name)/grid.bin"))
        }
        return new
    }

    /// A patched file over the write-behind size, applied with a thread cap of 1 and of 4:
    /// the same file either way (with 4, the second thread hashes and writes it).
    @Test func anApplyCappedAtOneThreadGivesTheSameFile() async throws {
        let dir = TemporaryDirectory("behind")
        let new = try Self.grids(in: dir, seed: 8, size: 6 << 20, every: 100_003, by: 1)
        _ = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path("p"), options: PatchOptions(level: 3))
        }
        for threads in [1, 4] {
            let out = dir.path("out\(threads)")
            _ = try await RawThread.value {
                try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("old"), into: out, resumeIn: nil, threads: threads)
            }
            #expect(try Data(contentsOf: out.appendingPathComponent("grid.bin")) == Data(new), "\(threads) threads")
        }
    }

    /// A segmented file (three 4 MiB segments) built in a resume folder, with a thread cap
    /// of 1 and of 4: with 4 its bytes are hashed and written behind, and each segment's
    /// checkpoint waits until they are written. The same file either way, the checkpoint
    /// files gone once it is done.
    @Test func aSegmentedApplyWrittenBehindGivesTheSameFile() async throws {
        let dir = TemporaryDirectory("behind")
        let new = try Self.grids(in: dir, seed: 9, size: 12 << 20, every: 200_003, by: 3)
        var options = PatchOptions(level: 3)
        (options.segmentThreshold, options.segmentLength, options.segmentMargin) = (8 << 20, 4 << 20, 1 << 20)
        options.wholeRawFileSuffix = false
        let fixed = options
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path("p"), options: fixed)
        }
        #expect(stats.file("grid.bin")?.encoding == .segmentedDelta, "\(String(describing: stats.file("grid.bin")?.tried))")
        for threads in [1, 4] {
            let out = dir.path("out\(threads)")
            let resume = dir.path("resume\(threads)")
            _ = try await RawThread.value {
                try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("old"), into: out, resumeIn: resume, threads: threads)
            }
            #expect(try Data(contentsOf: out.appendingPathComponent("grid.bin")) == Data(new), "\(threads) threads")
            #expect(FileSystem.names(in: resume.path).isEmpty, "\(FileSystem.names(in: resume.path))")
        }
    }
}
