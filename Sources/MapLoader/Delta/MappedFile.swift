#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A whole file mapped read-only into memory (`mmap(PROT_READ, MAP_PRIVATE)` via Glibc).
///
/// The delta codec needs the old file (the zstd prefix) addressable as one buffer for the
/// whole frame; mapping it lets the kernel page it in on demand and drop it under memory
/// pressure instead of copying it onto the heap. The file must not be truncated while
/// mapped (installed generations are immutable, so it is not). Unmapped on deinit.
package final class MappedFile {
    /// The mapped bytes (empty for an empty file).
    package let bytes: UnsafeRawBufferPointer
    /// The path, for messages.
    package let path: String

    /// Maps the regular file at `path`; a symlink or a missing file throws
    /// ``PatchError/sourceMissing(path:)`` naming `displayPath`.
    package init(path: String, displayPath: String) throws {
        let file: PosixFile
        do {
            file = try PosixFile.openForReading(path)
        } catch PatchError.io(_, _, let code) where code == ENOENT || code == ELOOP || code == ENOTDIR {
            throw PatchError.sourceMissing(path: displayPath)
        }
        let st = try file.status()
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw PatchError.sourceMissing(path: displayPath) }
        self.path = path
        let size = Int(st.st_size)
        guard size > 0 else {
            bytes = UnsafeRawBufferPointer(start: nil, count: 0)
            return
        }
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, file.fd, 0), base != MAP_FAILED else {
            throw PatchError.io(path: path, operation: "mmap", errno: errno)
        }
        _ = madvise(base, size, MADV_WILLNEED)
        bytes = UnsafeRawBufferPointer(start: base, count: size)
    }

    deinit {
        if let base = bytes.baseAddress { munmap(UnsafeMutableRawPointer(mutating: base), bytes.count) }
    }
}
