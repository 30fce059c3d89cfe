import Crypto
import Foundation
import Testing
import MapTestSupport
import MapDelta
import MapPlatform

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
}
