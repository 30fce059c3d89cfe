import Foundation
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

extension DeltaTests {
    /// ZstdDelta: the `--patch-from` style codec for one file.
    @Suite struct CodecTests {
        /// An old/new pair of record files (≈1.3 MB) with 2% of the records changed.
        private func pair(in dir: TemporaryDirectory) -> (old: URL, new: URL) {
            let records = Records.make(count: 30_000, seed: 21)
            Trees.write(records.flatMap { $0 }, "old.bin", in: dir.url)
            Trees.write(Records.mutate(records, fraction: 0.02, seed: 22).flatMap { $0 }, "new.bin", in: dir.url)
            return (dir.path("old.bin"), dir.path("new.bin"))
        }

        @Test func deltaIsFarSmallerThanPlainZstdAndDecodesExactly() throws {
            let dir = TemporaryDirectory()
            let (old, new) = pair(in: dir)
            let delta = try ZstdDelta.encode(new: new, old: old, to: dir.path("d"), level: 3)
            let plain = try ZstdDelta.encode(new: new, old: nil, to: dir.path("z"), level: 3)
            #expect(delta * 10 < plain, "delta \(delta) B, plain \(plain) B")
            try ZstdDelta.decode(delta: dir.path("d"), old: old, to: dir.path("out"))
            #expect(try Data(contentsOf: dir.path("out")) == Data(contentsOf: new))
            try ZstdDelta.decode(delta: dir.path("z"), old: nil, to: dir.path("out2"))
            #expect(try Data(contentsOf: dir.path("out2")) == Data(contentsOf: new))
        }

        @Test func deltaCannotBeDecodedWithoutItsOldFile() throws {
            let dir = TemporaryDirectory()
            let (old, new) = pair(in: dir)
            _ = try ZstdDelta.encode(new: new, old: old, to: dir.path("d"), level: 3)
            guard case .codec? = patchError({ try ZstdDelta.decode(delta: dir.path("d"), old: nil, to: dir.path("out")) }) else {
                Issue.record("a delta decoded without its prefix")
                return
            }
        }

        @Test func windowCoversTheNewFileLikeTheCLI() {
            #expect(ZstdDelta.windowLog(forContentSize: 0) == 10)
            #expect(ZstdDelta.windowLog(forContentSize: 1000) == 10)
            #expect(ZstdDelta.windowLog(forContentSize: 5_000_000) == 23)
            #expect(ZstdDelta.windowLog(forContentSize: 64 << 20) == 27)
            #expect(ZstdDelta.windowLog(forContentSize: (1 << 31) - 1) == 31)
            #expect(ZstdDelta.windowLog(forContentSize: 1 << 31) == nil)
            #expect(ZstdDelta.deltaLimitReason(oldSize: 10, newSize: 3 << 30) != nil)
            #expect(ZstdDelta.deltaLimitReason(oldSize: 3 << 30, newSize: 10) != nil)
            #expect(ZstdDelta.deltaLimitReason(oldSize: 10, newSize: 10) == nil)
        }

        @Test func longDistanceMatchingWhenTheWindowOutrunsTheChainTable() {
            // Level 19 on 64 MB: window 2^27 is beyond the level's chain cycle, so LDM is on.
            #expect(ZstdCompressor.needsLongDistanceMatching(windowLog: 27, level: 19, newSize: 64 << 20, prefixSize: 64 << 20))
            // Level 19 on 1 MB: the chain table reaches the whole window.
            #expect(!ZstdCompressor.needsLongDistanceMatching(windowLog: 21, level: 19, newSize: 1 << 20, prefixSize: 1 << 20))
            // Level 3 reaches far less: already on at 4 MB.
            #expect(ZstdCompressor.needsLongDistanceMatching(windowLog: 23, level: 3, newSize: 4 << 20, prefixSize: 4 << 20))
        }

        @Test func oldFileBeyondTheWindowLimitIsRefusedWithAReason() throws {
            let dir = TemporaryDirectory()
            let huge = dir.path("huge.bin")
            #expect(FileManager.default.createFile(atPath: huge.path, contents: nil))
            let handle = try FileHandle(forWritingTo: huge)
            try handle.truncate(atOffset: UInt64(ZstdDelta.maxFileSize) + 1)  // sparse: no disk used
            try handle.close()
            Trees.write(Array("small".utf8), "small.bin", in: dir.url)
            #expect(throws: PatchBuildError.self) {
                _ = try ZstdDelta.encode(new: dir.path("small.bin"), old: huge, to: dir.path("d"))
            }
        }

        @Test func builderFallsBackToPlainZstdBeyondTheWindowAndSaysWhy() throws {
            let dir = TemporaryDirectory()
            let huge = dir.path("huge.bin")
            #expect(FileManager.default.createFile(atPath: huge.path, contents: nil))
            let handle = try FileHandle(forWritingTo: huge)
            try handle.truncate(atOffset: UInt64(ZstdDelta.maxFileSize) + 1)  // sparse: no disk used
            try handle.close()
            Trees.write(Array(String(repeating: "compressible ", count: 500).utf8), "small.bin", in: dir.url)
            let chooser = PayloadChooser(compressor: try ZstdCompressor(), level: 3, workDirectory: dir.url.path)
            let choice = try chooser.choose(newPath: dir.path("small.bin").path, newSize: 6500, basePath: huge.path)
            #expect(choice.encoding == .zstd)
            #expect(choice.tried[.delta] == nil)
            #expect(choice.note?.contains("2 GiB") == true, "\(choice.note ?? "no note")")
        }

        @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/zstd")))
        func framesInteroperateWithTheZstdCLI() throws {
            let dir = TemporaryDirectory()
            let (old, new) = pair(in: dir)
            _ = try ZstdDelta.encode(new: new, old: old, to: dir.path("ours.zst"), level: 3)
            try run(
                "/usr/bin/zstd",
                [
                    "-q", "-d", "-f", "--patch-from=\(old.path)", dir.path("ours.zst").path,
                    "-o", dir.path("cli-out").path,
                ])
            #expect(try Data(contentsOf: dir.path("cli-out")) == Data(contentsOf: new))
            try run("/usr/bin/zstd", ["-q", "-f", "-3", "--patch-from=\(old.path)", new.path, "-o", dir.path("cli.zst").path])
            try ZstdDelta.decode(delta: dir.path("cli.zst"), old: old, to: dir.path("our-out"))
            #expect(try Data(contentsOf: dir.path("our-out")) == Data(contentsOf: new))
        }

        private func run(_ tool: String, _ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = arguments
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "\(tool) \(arguments.joined(separator: " "))")
        }
    }
}
