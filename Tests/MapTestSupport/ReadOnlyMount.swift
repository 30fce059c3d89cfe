import Foundation

/// A small tmpfs mounted for a test, which can be switched to read-only: the only way to
/// make a folder unwritable for root.
package struct ReadOnlyMount {
    package let url: URL

    package static let available: Bool = {
        guard let probe = try? ReadOnlyMount() else { return false }
        probe.unmount()
        return true
    }()

    package init(size: String = "64m", inodes: Int? = nil) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("maploader-mount-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let options = "size=\(size)" + (inodes.map { ",nr_inodes=\($0)" } ?? "")
        guard Self.shell("mount", "-t", "tmpfs", "-o", options, "tmpfs", url.path) else {
            try? FileManager.default.removeItem(at: url)
            throw CocoaError(.fileWriteNoPermission)
        }
    }

    package func makeReadOnly() throws {
        guard Self.shell("mount", "-o", "remount,ro", url.path) else { throw CocoaError(.fileWriteNoPermission) }
    }

    package func unmount() {
        _ = Self.shell("umount", url.path)
        try? FileManager.default.removeItem(at: url)
    }

    @discardableResult
    package static func shell(_ arguments: String...) -> Bool { shell(arguments) }

    @discardableResult
    package static func shell(_ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}
