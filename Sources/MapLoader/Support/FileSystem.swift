import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Small file-system calls that report the system's own reason (`Read-only file system`,
/// `No space left on device`) rather than Foundation's generic wrapper.
enum FileSystem {
    /// `mkdir -p`: creates `url` and its missing parents.
    static func makeDirectories(_ url: URL) throws {
        var path = ""
        for component in url.standardizedFileURL.path.split(separator: "/") {
            path += "/" + component
            if mkdir(path, 0o755) != 0 {
                let code = errno
                var info = stat()
                guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                    throw StorageError(path: path, errno: code == EEXIST ? ENOTDIR : code)
                }
            }
        }
    }

    /// Writes `data` to the file at `url`, creating or truncating it (callers write into
    /// staging or a temporary name and rename afterwards).
    static func write(_ data: Data, to url: URL) throws {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw StorageError(path: url.path, errno: errno) }
        defer { close(fd) }
        try data.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + done, raw.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw StorageError(path: url.path, errno: errno)
                }
                done += n
            }
        }
    }
}
