#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An open file descriptor, closed when the object goes away; thin `pread`/`write`/`fsync`
/// wrappers that retry on `EINTR` and throw ``PatchError/io(path:operation:errno:)``.
package final class PosixFile {
    /// The descriptor.
    package let fd: Int32
    /// The path, for messages.
    package let path: String

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    /// Opens `path` read-only; a symlink in the last component is refused.
    package static func openForReading(_ path: String) throws -> PosixFile {
        try open(path, flags: O_RDONLY | O_CLOEXEC | O_NOFOLLOW, mode: 0, operation: "open")
    }

    /// Creates `path`, which must not exist yet, for writing (mode 0644 before umask).
    package static func create(_ path: String) throws -> PosixFile {
        try open(path, flags: O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode: 0o644,
                 operation: "create")
    }

    /// Creates or truncates `path` for writing (mode 0644 before umask).
    package static func createOrTruncate(_ path: String) throws -> PosixFile {
        try open(path, flags: O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o644, operation: "create")
    }

    /// Opens a directory for `fsync`.
    package static func openDirectory(_ path: String) throws -> PosixFile {
        try open(path, flags: O_RDONLY | O_DIRECTORY | O_CLOEXEC, mode: 0, operation: "open directory")
    }

    private static func open(_ path: String, flags: Int32, mode: mode_t, operation: String) throws -> PosixFile {
        while true {
            let fd = systemOpen(path, flags, mode)
            if fd >= 0 { return PosixFile(fd: fd, path: path) }
            if errno != EINTR { throw PatchError.io(path: path, operation: operation, errno: errno) }
        }
    }

    /// The file's `stat`.
    package func status() throws -> stat {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw PatchError.io(path: path, operation: "stat", errno: errno) }
        return st
    }

    /// The file size in bytes.
    package func size() throws -> Int64 { Int64(try status().st_size) }

    /// Reads up to `buffer.count` bytes at `offset`; fewer only at end of file.
    package func readChunk(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        try fill(buffer) { pread(fd, $0, $1, off_t(offset) + off_t($2)) }
    }

    /// Reads up to `buffer.count` bytes from the current position; fewer only at end of file.
    package func readChunk(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try fill(buffer) { pointer, count, _ in systemRead(fd, pointer, count) }
    }

    /// Calls `read(pointer, count, done)` until `buffer` is full or the file ends, retrying on EINTR.
    private func fill(_ buffer: UnsafeMutableRawBufferPointer,
                      _ read: (UnsafeMutableRawPointer, Int, Int) -> Int) throws -> Int {
        var done = 0
        while done < buffer.count {
            let n = read(buffer.baseAddress! + done, buffer.count - done, done)
            if n < 0 {
                if errno == EINTR { continue }
                throw PatchError.io(path: path, operation: "read", errno: errno)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Writes all of `buffer` at the current position.
    package func writeAll(_ buffer: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < buffer.count {
            let n = systemWrite(fd, buffer.baseAddress! + done, buffer.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw PatchError.io(path: path, operation: "write", errno: errno)
            }
            done += n
        }
    }

    /// Flushes the file's data and metadata to disk.
    package func sync() throws {
        while fsync(fd) != 0 {
            if errno != EINTR { throw PatchError.io(path: path, operation: "fsync", errno: errno) }
        }
    }
}

/// `open(2)`, named apart from ``PosixFile``'s methods.
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
/// `read(2)`, named apart from ``PosixFile``'s methods.
private func systemRead(_ fd: Int32, _ buf: UnsafeMutableRawPointer, _ n: Int) -> Int { read(fd, buf, n) }
/// `write(2)`, named apart from ``PosixFile``'s methods.
private func systemWrite(_ fd: Int32, _ buf: UnsafeRawPointer, _ n: Int) -> Int { write(fd, buf, n) }
