import Foundation
import MapPlatform

/// An open regular file inside the served root. The owner must call `close()`.
struct ServedFile: Sendable {
    let fd: Int32
    let size: Int64
    let validators: Validators
    /// `application/json` for `.json`, `application/octet-stream` otherwise.
    let contentType: String

    /// The canonical (symlink-free) absolute path of `directory`, if it is a directory.
    static func canonicalRoot(_ directory: String) -> String? {
        guard let real = canonicalPath(directory) else { return nil }
        var info = stat()
        guard stat(real, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        return real
    }

    /// What opening a requested path gave.
    enum Opening {
        case file(ServedFile)
        /// No such file to serve: missing, not a regular file, or outside the root (404).
        case missing
        /// The file may be there, but the process is out of descriptors or memory (503:
        /// a client must not take it for missing, and retries).
        case unavailable
    }

    /// Opens `segments` under `root` (a canonical path), telling a path that does not
    /// exist, is not a regular file, or resolves (through symlinks) outside root from one
    /// the process cannot open now.
    static func open(segments: [String], root: String) -> Opening {
        switch Result(catching: { () throws(Errno) in try openFile(segments: segments, root: root) }) {
        case .success(let file?): return .file(file)
        case .success(nil): return .missing
        case .failure(let error): return [EMFILE, ENFILE, ENOMEM].contains(error.code) ? .unavailable : .missing
        }
    }

    /// An `errno` value as an error.
    struct Errno: Error { let code: Int32 }

    /// ``open(segments:root:)``: `nil` for a path there is nothing to serve at, the
    /// `errno` of a failed open.
    private static func openFile(segments: [String], root: String) throws(Errno) -> ServedFile? {
        guard !segments.isEmpty, let path = canonicalPath(root + "/" + segments.joined(separator: "/")) else {
            return nil
        }
        let inside = root == "/" ? path.hasPrefix("/") : path.hasPrefix(root + "/")
        guard inside else { return nil }

        var info = stat()
        // Check before opening: opening a FIFO would block.
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        let fd = Posix.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw Errno(code: errno) }
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            Posix.close(fd)
            return nil
        }
        let size = Int64(info.st_size)
        return ServedFile(
            fd: fd,
            size: size,
            validators: Validators(
                size: size, mtimeSeconds: Int(info.st_mtim.tv_sec),
                mtimeNanoseconds: Int(info.st_mtim.tv_nsec)),
            contentType: path.hasSuffix(".json") ? "application/json" : "application/octet-stream"
        )
    }

    /// Reads up to `count` bytes at `offset` into `buffer`; returns the count, 0 at end of file, -1 on error.
    func read(into buffer: UnsafeMutableRawBufferPointer, count: Int, at offset: Int64) -> Int {
        while true {
            let n = pread(fd, buffer.baseAddress, min(count, buffer.count), off_t(offset))
            if n < 0 && errno == EINTR { continue }
            return n
        }
    }

    func close() { Posix.close(fd) }

    private static func canonicalPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
