import Synchronization
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

/// An open file, closed when the object goes away: positional reads, whole writes and
/// `fsync`, each retried on `EINTR` and failing with ``SystemError``.
package final class SystemFile: Sendable {
    /// The descriptor.
    package let descriptor: FileDescriptor
    /// The path, for messages.
    package let path: String

    private init(descriptor: FileDescriptor, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    /// Whether `deinit` still closes the descriptor.
    private let owned = Atomic<Bool>(true)

    deinit { if owned.load(ordering: .acquiring) { try? descriptor.close() } }

    /// Hands the descriptor to the caller (Foundation's `FileHandle`, say), which then
    /// closes it; this object no longer does.
    package func releaseDescriptor() -> Int32 {
        owned.store(false, ordering: .releasing)
        return descriptor.rawValue
    }

    /// Opens `path` read-only; a symlink in the last component is refused.
    package static func openForReading(_ path: String) throws(SystemError) -> SystemFile {
        try open(path, .readOnly, [.closeOnExec, .noFollow], operation: "open")
    }

    /// Opens the regular file `path` read-only: anything else (a FIFO, a device, a folder,
    /// a symlink) fails with `EINVAL` at once. The open itself does not wait (a FIFO with no
    /// writer would block `open(2)` for ever, unkillable by Ctrl-C): a folder site on a
    /// stick may hold anything.
    package static func openRegularForReading(_ path: String) throws(SystemError) -> SystemFile {
        let file = try open(path, .readOnly, [.closeOnExec, .noFollow, .nonBlocking], operation: "open")
        guard try file.status().kind == .file else { throw SystemError("open", path, .invalidArgument) }
        return file
    }

    /// Creates `path`, which must not exist yet, for writing (mode 0644 before umask, or
    /// 0600 when `ownerOnly`).
    package static func create(_ path: String, ownerOnly: Bool = false) throws(SystemError) -> SystemFile {
        try open(
            path, .writeOnly, [.create, .exclusiveCreate, .closeOnExec, .noFollow], operation: "create",
            permissions: ownerOnly ? [.ownerReadWrite] : nil)
    }

    /// Creates or truncates `path` for writing (mode 0644 before umask).
    package static func createOrTruncate(_ path: String) throws(SystemError) -> SystemFile {
        try open(path, .writeOnly, [.create, .truncate, .closeOnExec], operation: "create")
    }

    /// Opens `path` for writing at its end, creating it empty when missing (a partial
    /// download that a retry continues).
    package static func openForAppend(_ path: String) throws(SystemError) -> SystemFile {
        let file = try open(path, .writeOnly, [.create, .closeOnExec], operation: "open")
        do {
            _ = try file.descriptor.seek(offset: 0, from: .end)
        } catch {
            throw SystemError("seek", path, Errno.of(error))
        }
        return file
    }

    /// Opens `path` for reading and writing, creating it when missing (lock files).
    package static func openForUpdate(_ path: String) throws(SystemError) -> SystemFile {
        try open(path, .readWrite, [.create, .closeOnExec], operation: "open")
    }

    /// Creates or truncates `path` for reading and writing (a file mapped for writing, which
    /// `mmap` needs readable).
    package static func createForUpdate(_ path: String) throws(SystemError) -> SystemFile {
        try open(path, .readWrite, [.create, .truncate, .closeOnExec], operation: "create")
    }

    /// Opens a directory (for `fsync`).
    package static func openDirectory(_ path: String) throws(SystemError) -> SystemFile {
        try open(path, .readOnly, [.directory, .closeOnExec], operation: "open directory")
    }

    private static func open(
        _ path: String, _ mode: FileDescriptor.AccessMode, _ options: FileDescriptor.OpenOptions,
        operation: String, permissions: FilePermissions? = nil
    ) throws(SystemError) -> SystemFile {
        do {
            let descriptor = try FileDescriptor.open(
                FilePath(path), mode, options: options,
                permissions: options.contains(.create) ? permissions ?? [.ownerReadWrite, .groupRead, .otherRead] : nil)
            return SystemFile(descriptor: descriptor, path: path)
        } catch {
            throw SystemError(operation, path, Errno.of(error))
        }
    }

    /// The file's status.
    package func status() throws(SystemError) -> FileStatus {
        guard let status = FileStatus.of(descriptor: descriptor.rawValue) else {
            throw SystemError("stat", path, Errno.current)
        }
        return status
    }

    /// The file size in bytes.
    package func size() throws(SystemError) -> Int64 { try status().size }

    /// Reads up to `buffer.count` bytes at `offset`; fewer only at end of file.
    package func readChunk(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(SystemError) -> Int {
        try fill(buffer) { part, done in try descriptor.read(fromAbsoluteOffset: offset + Int64(done), into: part) }
    }

    /// Reads up to `buffer.count` bytes from the current position; fewer only at end of file.
    package func readChunk(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        try fill(buffer) { part, _ in try descriptor.read(into: part) }
    }

    /// Calls `read(part, done)` until `buffer` is full or the file ends.
    private func fill(
        _ buffer: UnsafeMutableRawBufferPointer,
        _ read: (UnsafeMutableRawBufferPointer, Int) throws -> Int
    ) throws(SystemError) -> Int {
        var done = 0
        while done < buffer.count {
            let n: Int
            do {
                n = try read(UnsafeMutableRawBufferPointer(rebasing: buffer[done...]), done)
            } catch {
                throw SystemError("read", path, Errno.of(error))
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Reads the rest of the file from the current position in 1 MiB chunks, handing each
    /// to `body`: the one streaming copy loop of the library.
    package func forEachChunk(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = try readChunk(into: buffer)
            if n == 0 { return }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
    }

    /// Writes all of `buffer` at the current position.
    package func writeAll(_ buffer: UnsafeRawBufferPointer) throws(SystemError) {
        try injectedWriteFailure()
        do {
            _ = try descriptor.writeAll(buffer)
        } catch {
            throw SystemError("write", path, Errno.of(error))
        }
    }

    /// Writes all of `buffer` at `offset`, leaving the position alone.
    package func writeAll(_ buffer: UnsafeRawBufferPointer, at offset: Int64) throws(SystemError) {
        try injectedWriteFailure()
        do {
            _ = try descriptor.writeAll(toAbsoluteOffset: offset, buffer)
        } catch {
            throw SystemError("write", path, Errno.of(error))
        }
    }

    /// A write failing as a test's fault says (``SystemFaults``); `EINTR` is retried, as the
    /// real call's is.
    private func injectedWriteFailure() throws(SystemError) {
        while let injected = SystemFaults.failure(.write, path) {
            if injected != .interrupted { throw SystemError("write", path, injected) }
        }
    }

    /// Moves the write position to `offset` from the start.
    package func seek(to offset: Int64) throws(SystemError) {
        do {
            _ = try descriptor.seek(offset: offset, from: .start)
        } catch {
            throw SystemError("seek", path, Errno.of(error))
        }
    }

    /// Cuts the file to `size` bytes.
    package func truncate(to size: Int64) throws(SystemError) {
        while ftruncate(descriptor.rawValue, off_t(size)) != 0 {
            let code = Errno.current
            if code != .interrupted { throw SystemError("truncate", path, code) }
        }
    }

    /// Makes the file `size` bytes long with its blocks allocated, so that writing them later
    /// cannot run out of space, with `posix_fallocate` (glibc, Bionic and musl; glibc writes
    /// the blocks itself on file systems without `fallocate`). Returns false, having
    /// reserved nothing, where that is not possible: a C library or file system that does
    /// not do it (`EOPNOTSUPP`, `EINVAL`), and Darwin, whose `F_PREALLOCATE` is not used
    /// here (unverified: no Darwin build on this project's machines). Fails with `ENOSPC` on
    /// a full disk.
    package func reserve(_ size: Int64) throws(SystemError) -> Bool {
        #if canImport(Darwin)
            return false
        #else
            do {
                try SystemFaults.retrying(.reserve, path, named: "reserve") {
                    let code = posix_fallocate(descriptor.rawValue, 0, off_t(size))
                    if code != 0 { errno = code }  // posix_fallocate returns its error instead
                    return code == 0
                }
                return true
            } catch {
                if error.errno == .notSupported || error.errno == .invalidArgument { return false }
                throw error
            }
        #endif
    }

    /// Flushes the file's data and metadata to disk. On Darwin `fsync` leaves the data in
    /// the drive's cache, which a power loss can lose: `F_FULLFSYNC` asks the drive to write
    /// it (falling back to `fsync` on file systems that refuse it, such as network shares).
    package func sync() throws(SystemError) {
        try SystemFaults.retrying(.fsync, path, named: "fsync") { flush() }
    }

    /// One flush of ``sync()``: whether it succeeded (else `errno` says why).
    private func flush() -> Bool {
        #if canImport(Darwin)
            if fcntl(descriptor.rawValue, F_FULLFSYNC) == 0 { return true }
        #endif
        return fsync(descriptor.rawValue) == 0
    }

    /// Takes a `flock(2)` lock without waiting: `true` when taken, `false` when another open
    /// file holds a conflicting one.
    package func tryLock(exclusive: Bool) throws(SystemError) -> Bool {
        if flock(descriptor.rawValue, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0 { return true }
        let code = Errno.current
        guard code == .wouldBlock || code == .interrupted else { throw SystemError("lock", path, code) }
        return false
    }
}

extension Errno {
    /// The calling thread's `errno`.
    package static var current: Errno { Errno(rawValue: errno) }

    /// The `Errno` a swift-system call threw (they throw nothing else).
    package static func of(_ error: any Error) -> Errno { error as? Errno ?? .ioError }
}
