import Foundation
import MapTestSupport
import Testing

@testable import MapLoader

/// Uninstalling frees the bytes on disk at once, measured with `statfs` on a file system
/// of the test's own (a small tmpfs, which needs root; skipped where mounting is refused).
@Suite struct FreedSpaceTests {
    static let canMount: Bool = {
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent("maploader-mount-probe-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: probe) }
        guard (try? FileManager.default.createDirectory(at: probe, withIntermediateDirectories: true)) != nil,
            run("/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", probe.path]) == 0
        else { return false }
        _ = run("/bin/umount", [probe.path])
        return true
    }()

    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    @Test(.enabled(if: canMount, "mounting a tmpfs needs root"))
    func uninstallFreesTheBytesOnDisk() async throws {
        let site = try TestSite()
        let mountPoint = site.dir.path("tmpfs")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        #expect(Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=64m", "tmpfs", mountPoint.path]) == 0)
        defer { Self.run("/bin/umount", [mountPoint.path]) }
        let data = mountPoint.appendingPathComponent("maps")
        let loader = site.loader(dataDirectory: data)
        try await loader.install(["europe"])
        let installed = try await loader.diskUsage().installedBytes
        let before = try #require(FileSystem.availableSpace(at: mountPoint.path))
        try await loader.uninstallAll()
        let after = try #require(FileSystem.availableSpace(at: mountPoint.path))
        // Every installed byte is free again (tmpfs gives back whole pages, so at least that).
        #expect(after - before >= installed, "freed \(after - before) of \(installed) installed bytes")
        #expect(try await loader.diskUsage().installedBytes == 0)
    }
}
