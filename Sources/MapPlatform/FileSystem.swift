import CPlatform
package import Foundation
package import SystemPackage

#if canImport(Darwin)
    import Darwin
#elseif canImport(Android)
    import Android
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The file-system calls MapLoader makes, each failing with ``SystemError`` and the system's
/// own reason (`Read-only file system`, `No space left on device`) rather than Foundation's
/// generic wrapper. Linux and Darwin differences stay in this folder.
package enum FileSystem {
    /// `mkdir -p`: creates `path` and its missing parents. The folder itself is tried
    /// first and a parent only where it is missing, so a folder that exists costs one call,
    /// not one per part of its path. As with `mkdir -p`, a link among the parents that
    /// exist is followed (macOS's `/var` is one); `path` itself must be a folder, not a
    /// link to one.
    package static func makeDirectories(_ path: String) throws(SystemError) {
        guard !path.isEmpty else { return }
        var path = Substring(path)
        while path.count > 1, path.hasSuffix("/") { path = path.dropLast() }
        if mkdir(String(path), 0o755) == 0 { return }
        let code = Errno.current
        if code == .noSuchFileOrDirectory, let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            try makeDirectories(String(path[..<slash]))
            try makeDirectory(String(path))
            return
        }
        guard FileStatus.of(String(path))?.kind == .directory else {
            throw SystemError("mkdir", String(path), code == .fileExists ? .notDirectory : code)
        }
    }

    /// `mkdir -p` of the relative path `relative` inside the folder `base` (which the caller
    /// made or checked), skipping the folders in `made` and adding those it makes or finds:
    /// a tree's builder spares the calls of ``makeDirectories(_:)-(String)`` from the root
    /// for every file.
    package static func makeDirectories(_ relative: String, under base: String, made: inout Set<String>) throws(SystemError) {
        var prefix = ""
        for component in relative.split(separator: "/") {
            prefix += prefix.isEmpty ? String(component) : "/" + component
            if made.contains(prefix) { continue }
            try makeDirectory(base + "/" + prefix)
            made.insert(prefix)
        }
    }

    /// `mkdir -p` of a URL's path.
    package static func makeDirectories(_ url: URL) throws(SystemError) {
        try makeDirectories(url.standardizedFileURL.path)
    }

    /// Creates the folder `path` unless a folder (not a link to one) is already there.
    /// Returns `false` when it already existed.
    @discardableResult
    package static func makeDirectory(_ path: String) throws(SystemError) -> Bool {
        if mkdir(path, 0o755) == 0 { return true }
        let code = Errno.current
        guard FileStatus.of(path)?.kind == .directory else {
            throw SystemError("mkdir", path, code == .fileExists ? .notDirectory : code)
        }
        return false
    }

    /// Writes `data` to the file at `url`, creating or truncating it (callers write into
    /// staging or a temporary name and rename afterwards).
    package static func write(_ data: Data, to url: URL) throws(SystemError) {
        let file = try SystemFile.createOrTruncate(url.path)
        do {
            try data.withUnsafeBytes { try file.writeAll($0) }
        } catch {
            throw error as? SystemError ?? SystemError("write", url.path, .ioError)
        }
    }

    /// `link(2)`: a second name for the file at `source`.
    package static func link(_ source: String, _ target: String) throws(SystemError) {
        guard cLink(source, target) == 0 else { throw SystemError("link", target, .current) }
    }

    /// Makes `target` (which must not exist) a copy-on-write clone of the file `source`:
    /// the two share every block until one of them is written, so the clone takes no space
    /// at first. Linux `FICLONE` (btrfs, XFS with reflink), Darwin `clonefile` (APFS).
    /// Returns `false` where the file system cannot clone (nothing is left at `target`).
    package static func cloneFile(_ source: String, _ target: String) -> Bool {
        #if canImport(Darwin)
            return clonefile(source, target, 0) == 0
        #else
            guard let input = try? SystemFile.openForReading(source), let output = try? SystemFile.create(target) else {
                return false
            }
            // FICLONE is _IOW(0x94, 9, int).
            let ficlone: UInt = 0x4004_9409
            guard ioctl(output.descriptor.rawValue, ficlone, input.descriptor.rawValue) == 0 else {
                remove(target)
                return false
            }
            return true
        #endif
    }

    /// `rename(2)`: atomically replaces `target` with `source`.
    package static func rename(_ source: String, _ target: String) throws(SystemError) {
        if let injected = SystemFaults.failure(.rename, target) { throw SystemError("rename", target, injected) }
        guard cRename(source, target) == 0 else { throw SystemError("rename", target, .current) }
    }

    /// `symlink(2)`: a link at `path` whose text is `target`.
    package static func symbolicLink(_ path: String, to target: String) throws(SystemError) {
        guard symlink(target, path) == 0 else { throw SystemError("symlink", path, .current) }
    }

    /// `unlink(2)`; a missing file is not an error.
    package static func remove(_ path: String) {
        _ = unlink(path)
    }

    /// `truncate(2)` to no bytes, for a scratch file used again and again: its space is
    /// freed but its inode kept, since creating a file anew is what costs on a file system
    /// that has just deleted many (journal-less ext4 walks its recently freed inodes). A
    /// missing file is not an error.
    package static func empty(_ path: String) {
        _ = truncate(path, 0)
    }

    /// Removes `url`, a file, a link or a folder with everything in it, for cleanup: what is
    /// missing or cannot be removed is left. Returns whether it is gone.
    @discardableResult
    package static func removeTree(_ url: URL) -> Bool {
        (try? FileManager.default.removeItem(at: url)) != nil || FileStatus.of(url.path) == nil
    }

    /// The names in folder `path`, or none when it cannot be read.
    package static func names(in path: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
    }

    /// What the symbolic link at `path` points to, or `nil`.
    package static func linkTarget(_ path: String) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: path)
    }

    /// The bytes of the file at `path`, or `nil` when it cannot be read.
    package static func contents(_ path: String) -> Data? {
        FileManager.default.contents(atPath: path)
    }

    /// Creates `path` (which must not exist) readable and writable by its owner only (0600),
    /// with `data`, synced: for secrets such as signing keys.
    package static func writePrivate(_ data: Data, to path: String) throws(SystemError) {
        let file = try SystemFile.create(path, ownerOnly: true)
        let bytes = [UInt8](data)
        try bytes.withUnsafeBufferPointer { (buffer) throws(SystemError) in try file.writeAll(UnsafeRawBufferPointer(buffer)) }
        try file.sync()
    }

    /// Copies the file at `source` to `target`, which must not exist, streaming.
    package static func copyFile(_ source: String, _ target: String) throws(SystemError) {
        let input = try SystemFile.openForReading(source)
        let output = try SystemFile.create(target)
        do {
            try input.forEachChunk { try output.writeAll($0) }
        } catch let error as SystemError {
            remove(target)
            throw error
        } catch {
            remove(target)
            throw SystemError("copy", target, .ioError)
        }
    }

    /// `rmdir(2)`: removes `path` if it is an empty folder; anything else is left alone.
    package static func removeIfEmptyFolder(_ path: String) {
        _ = rmdir(path)
    }

    /// `fsync(2)` of a file or folder by path.
    package static func sync(_ path: String) throws(SystemError) {
        let file = try SystemFile.openForReading(path)
        try file.sync()
    }

    /// Flushes every written file under `tree` to disk. On Linux one `syncfs(2)` of the file
    /// system holding `tree` (cheaper than an `fsync` per file of a large tree, and unlike
    /// `sync(2)` it leaves the machine's other file systems alone). On Darwin, where no
    /// such call waits for the drive, each file is synced with `F_FULLFSYNC`
    /// (``SystemFile/sync()``).
    package static func syncAll(under tree: String) throws(SystemError) {
        #if canImport(Darwin)
            for file in try FileTree.files(in: tree) { try sync(tree + "/" + file.path) }
        #else
            let folder = try SystemFile.openDirectory(tree)
            try SystemFaults.retrying(.fsync, tree, named: "syncfs") { cplatform_syncfs(folder.descriptor.rawValue) == 0 }
        #endif
    }

    /// Why this process cannot write into `path`, or `nil` when it can.
    package static func writeProblem(_ path: String) -> Errno? {
        access(path, W_OK) == 0 ? nil : .current
    }

    /// Bytes an unprivileged writer may still use on the file system holding `path`.
    /// On Apple platforms this is the capacity the system offers for important use, which
    /// counts purgeable space it would free (what `statvfs` leaves out on iOS).
    package static func availableSpace(at path: String) -> Int64? {
        #if canImport(Darwin)
            if let values = try? URL(fileURLWithPath: path).resourceValues(forKeys: [.volumeAvailableCapacityForImportantUsageKey]),
                let capacity = values.volumeAvailableCapacityForImportantUsage
            {
                return capacity
            }
        #endif
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        // A FUSE or network file system may report any counts: saturate rather than trap.
        let (bytes, overflow) = Int64(clamping: info.f_bavail).multipliedReportingOverflow(by: Int64(clamping: info.f_frsize))
        return overflow ? .max : bytes
    }

    /// This process's id.
    package static var processID: Int32 { getpid() }

    /// The id of the user this process runs as.
    package static var userID: UInt32 { UInt32(getuid()) }

    /// The names in folder `path` as their exact bytes (without `.` and `..`).
    package static func entryNames(_ path: String) throws(SystemError) -> [[UInt8]] {
        guard let stream = opendir(path) else { throw SystemError("read folder", path, .current) }
        defer { closedir(stream) }
        var names: [[UInt8]] = []
        while let entry = readdir(stream) {
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix(while: { $0 != 0 })) }
            if bytes == [0x2E] || bytes == [0x2E, 0x2E] { continue }
            names.append(bytes)
        }
        return names
    }
}

// The C library's calls that ``FileSystem``'s own methods shadow by name, reached from file
// scope so that no platform module is named.

/// `link(2)`.
private func cLink(_ source: String, _ target: String) -> Int32 { link(source, target) }

/// `rename(2)`.
private func cRename(_ source: String, _ target: String) -> Int32 { rename(source, target) }
