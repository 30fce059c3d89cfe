package import SystemPackage

/// A failed system call: which operation, on which path, and the system's `errno`.
///
/// The one error type of the platform layer. Callers decide by ``errno`` (a typed
/// `Errno`), never by message text.
package struct SystemError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The path involved.
    package let path: String
    /// What was attempted: `open`, `write`, `rename`, `fsync`…
    package let operation: String
    /// The system's error number.
    package let errno: Errno

    /// The error of `operation` on `path`.
    package init(_ operation: String, _ path: String, _ errno: Errno) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    /// Whether the file system is full: no blocks or inodes left, or a quota reached.
    package var isNoSpace: Bool { errno == .noSpace || errno == .diskQuotaExceeded }

    /// Whether the file system does not do what was asked at all: `symlink(2)` and `link(2)`
    /// on FAT and exFAT (`ENOSYS` through FUSE, `EPERM` from the kernel's drivers) or a
    /// call a file system does not implement (`ENOTSUP`, `EOPNOTSUPP`).
    package var isUnsupported: Bool {
        [.noFunction, .notPermitted, .notSupported, .notSupportedOnSocket].contains(errno)
    }

    /// The system's own words for ``errno`` ("No space left on device").
    package var reason: String { errno.description }

    package var description: String { "\(operation) \(path): \(reason)" }
}
