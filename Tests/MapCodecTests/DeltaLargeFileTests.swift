import Foundation
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

extension DeltaTests {
    /// A file past zstd's default 128 MiB decoder window, with a small edit: the patch is
    /// segmented (32 MiB segments, each against its window of the old file), stays tiny
    /// and applies with one segment's decoder memory.
    ///
    /// It runs as an exit test, in a child process: its ~300 MB of zstd window and mapped
    /// old file would otherwise count against tests that watch this process's resident size.
    @Suite struct LargeFileTests {
        static let size: Int64 = 130 << 20

        @Test func smallEditToA130MBFileGivesATinyPatch() async throws {
            let reportDirectory = TemporaryDirectory("large-report")
            let report = reportDirectory.path("failure.txt").path
            await #expect(processExitsWith: .success) { [report = report as String] in
                try LargeFileTests.run(reportingFailuresTo: report)
            }
            if let failure = try? String(contentsOfFile: report, encoding: .utf8) {
                Issue.record("child process: \(failure)")
            }
        }

        /// Builds and applies the patch; a failed check writes its message to `report` and
        /// exits the child with a failure status.
        static func run(reportingFailuresTo report: String) throws {
            func check(_ ok: Bool, _ message: @autoclosure () -> String) {
                guard !ok else { return }
                try? message().write(toFile: report, atomically: true, encoding: .utf8)
                exit(EXIT_FAILURE)
            }
            let dir = TemporaryDirectory("large")
            let oldTree = dir.path("old")
            let newTree = dir.path("new")
            try FileManager.default.createDirectory(at: oldTree, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: newTree, withIntermediateDirectories: true)
            let expected = try writePair(
                old: oldTree.appendingPathComponent("planet.bin"),
                new: newTree.appendingPathComponent("planet.bin"))

            // The segments themselves are under test: no whole-file suffix-array trial.
            var options = PatchOptions(level: 3)
            options.wholeRawFileSuffix = false
            let stats = try PatchBuilder.build(from: oldTree, to: newTree, output: dir.path("p"), options: options)
            check(stats.file("planet.bin")?.encoding == .segmentedDelta, "planet.bin is not a segmented delta")
            check(stats.patchBytes < 64 << 10, "patch is \(stats.patchBytes) bytes")
            let files: [FileEntry]
            do {
                files = try PatchApplier.apply(patch: dir.path("p"), oldTree: oldTree, into: dir.path("out"))
            } catch {
                check(false, "apply failed: \(error)")
                return
            }
            check(files.first?.sha256 == expected, "apply reported another digest")
            check(try FileHashing.sha256(ofFileAt: dir.path("out/planet.bin")).hex == expected, "output differs")
        }

        /// Writes the old file (random bytes) and the new one in 1 MiB chunks: 200 bytes
        /// overwritten at 1/3, 4 KiB inserted at 2/3, 1000 bytes deleted near the end.
        /// Returns the new file's SHA-256.
        private static func writePair(old: URL, new: URL) throws -> String {
            _ = FileManager.default.createFile(atPath: old.path, contents: nil)
            _ = FileManager.default.createFile(atPath: new.path, contents: nil)
            let random = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom"))
            let oldOut = try FileHandle(forWritingTo: old)
            let newOut = try FileHandle(forWritingTo: new)
            defer {
                try? random.close()
                try? oldOut.close()
                try? newOut.close()
            }
            let edit = size / 3
            let insert = 2 * size / 3
            let delete = size - 5000
            var offset: Int64 = 0
            while offset < size {
                var chunk = try random.read(upToCount: 1 << 20)!
                try oldOut.write(contentsOf: chunk)
                let range = offset..<offset + Int64(chunk.count)
                if range.contains(edit) {
                    let at = Int(edit - offset)
                    let count = min(200, chunk.count - Int(edit - offset))
                    chunk.replaceSubrange(at..<at + count, with: Data(repeating: 0x5a, count: count))
                }
                if range.contains(delete) { chunk.removeSubrange(Int(delete - offset)..<Int(delete - offset) + 1000) }
                if range.contains(insert) { chunk.insert(contentsOf: Data(repeating: 0xa5, count: 4096), at: Int(insert - offset)) }
                try newOut.write(contentsOf: chunk)
                offset = range.upperBound
            }
            return try FileHashing.sha256(ofFileAt: new).hex
        }
    }
}
