import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Free space of a file system.
enum DiskSpace {
    /// Bytes an unprivileged writer may still use on the file system holding `url`.
    static func available(at url: URL) -> Int64? {
        var info = statvfs()
        guard statvfs(url.path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }
}
