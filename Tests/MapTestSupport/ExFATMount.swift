import Foundation

/// An exFAT file system, as on the SD cards and USB sticks that phones and head units take:
/// no symbolic links, no hard links. The kernel here has no exFAT driver, so it is mounted
/// through FUSE (`mount.exfat-fuse`, Debian exfat-fuse) from an image (`mkfs.exfat`,
/// exfatprogs) on a loop device. Needs root, `/dev/fuse` and a free loop device.
package struct ExFATMount {
    package let url: URL
    let image: URL
    let device: String

    /// Why a test on exFAT cannot run here, or `nil` when it can.
    package static let unavailable: String? = {
        guard getuid() == 0 else { return "needs root to attach a loop device and mount exFAT through FUSE" }
        guard FileManager.default.fileExists(atPath: "/dev/fuse") else { return "needs FUSE (/dev/fuse)" }
        do {
            try ExFATMount(size: "16M").unmount()
            return nil
        } catch {
            return "could not mount exFAT (mkfs.exfat from exfatprogs, mount.exfat-fuse from exfat-fuse, a loop device): \(error)"
        }
    }()

    package init(size: String) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("maploader-exfat-\(UUID().uuidString)")
        image = URL(fileURLWithPath: url.path + ".img")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        var attached: String?
        do {
            guard ReadOnlyMount.shell("truncate", "-s", size, image.path), Self.output(["mkfs.exfat", image.path]) != nil else {
                throw Failure(step: "mkfs.exfat")
            }
            guard let loop = Self.output(["losetup", "-f", "--show", image.path]), loop.hasPrefix("/dev/") else {
                throw Failure(step: "losetup")
            }
            attached = loop
            // The FUSE daemon outlives the mount command and would inherit every descriptor
            // without close-on-exec, among them the one Foundation's Process watches for the
            // child's end (the wait would last until the unmount): Python's subprocess
            // starts it with every other descriptor closed.
            let detached =
                "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode)"
            guard ReadOnlyMount.shell("python3", "-c", detached, "mount.exfat-fuse", loop, url.path) else {
                throw Failure(step: "mount.exfat-fuse")
            }
            device = loop
        } catch {
            if let attached { ReadOnlyMount.shell("losetup", "-d", attached) }
            try? FileManager.default.removeItem(at: url)
            try? FileManager.default.removeItem(at: image)
            throw error
        }
    }

    /// Unmounts (lazily when something still holds a file there: the mount goes once it is
    /// let go), detaches the loop device and removes the image; the folder is removed only
    /// once nothing is mounted on it.
    package func unmount() {
        if !ReadOnlyMount.shell("umount", url.path) { ReadOnlyMount.shell("umount", "-l", url.path) }
        ReadOnlyMount.shell("losetup", "-d", device)
        if ReadOnlyMount.shell("mountpoint", "-q", url.path) { return }
        try? FileManager.default.removeItem(at: url)
        try? FileManager.default.removeItem(at: image)
    }

    struct Failure: Error, CustomStringConvertible {
        let step: String
        var description: String { "\(step) failed" }
    }

    /// The standard output of a command that succeeded, trimmed.
    private static func output(_ arguments: [String]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// The live generation's folder of the data directory at `data`: where `current` points,
/// whether it is a symbolic link or (on file systems without links) a file naming it.
package func liveFolder(of data: URL) -> URL {
    let current = data.appendingPathComponent("current")
    if let text = try? String(contentsOf: current, encoding: .utf8),
        (try? FileManager.default.destinationOfSymbolicLink(atPath: current.path)) == nil
    {
        return data.appendingPathComponent(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
    return current
}
