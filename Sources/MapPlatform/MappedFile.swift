import SystemPackage

#if canImport(Darwin)
    import Darwin
#elseif canImport(Android)
    import Android
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A whole file, or a range of one, mapped read-only into memory (`mmap(PROT_READ, MAP_PRIVATE)`).
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
    /// The whole mapping, from the page that holds the first byte of ``bytes``.
    private let mapping: UnsafeRawBufferPointer

    /// Maps the regular file at `path`. A missing file, a symbolic link or anything but a
    /// regular file fails with `nil`; other failures throw.
    package init?(path: String) throws(SystemError) {
        let file: SystemFile
        do {
            file = try SystemFile.openForReading(path)
        } catch  where [.noSuchFileOrDirectory, .tooManySymbolicLinkLevels, .notDirectory].contains(error.errno) {
            return nil
        }
        let status = try file.status()
        guard status.kind == .file else { return nil }
        self.path = path
        let size = Int(status.size)
        guard size > 0 else {
            (bytes, mapping) = (UnsafeRawBufferPointer(start: nil, count: 0), UnsafeRawBufferPointer(start: nil, count: 0))
            return
        }
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, file.descriptor.rawValue, 0), base != MAP_FAILED else {
            throw SystemError("mmap", path, .current)
        }
        _ = madvise(base, size, MADV_WILLNEED)
        bytes = UnsafeRawBufferPointer(start: base, count: size)
        mapping = bytes
    }

    /// Maps the bytes `offset..<offset + length` of the open `file` (a payload inside a patch
    /// container). A range beyond the file's end is refused with `EINVAL`, before a page
    /// past the end could be touched (which would be a `SIGBUS`).
    package init(_ file: SystemFile, offset: Int64, length: Int64) throws(SystemError) {
        path = file.path
        let size = try file.size()
        guard offset >= 0, length > 0, offset <= size, length <= size - offset else {
            throw SystemError("map", file.path, .invalidArgument)
        }
        let page = Int64(sysconf(Int32(_SC_PAGESIZE)))
        let start = offset / page * page
        let count = Int(offset + length - start)
        guard let base = mmap(nil, count, PROT_READ, MAP_PRIVATE, file.descriptor.rawValue, off_t(start)), base != MAP_FAILED else {
            throw SystemError("mmap", file.path, .current)
        }
        mapping = UnsafeRawBufferPointer(start: base, count: count)
        bytes = UnsafeRawBufferPointer(start: base + Int(offset - start), count: Int(length))
    }

    /// Drops the process's pages of `range` (bytes of the file) once they are no longer
    /// needed: they stay in the page cache, but no longer count in the process's resident
    /// memory, so reading a large mapped file window by window keeps that to one window.
    /// Whole pages inside the range only; a later read pages them in again.
    package func release(_ range: Range<Int>) {
        guard let base = bytes.baseAddress, !range.isEmpty, range.lowerBound >= 0, range.upperBound <= bytes.count else { return }
        let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
        let first = UInt(bitPattern: base + range.lowerBound)
        let last = UInt(bitPattern: base + range.upperBound)
        let start = (first + page - 1) / page * page
        let end = range.upperBound == bytes.count ? (last + page - 1) / page * page : last / page * page
        guard end > start, let address = UnsafeMutableRawPointer(bitPattern: start) else { return }
        _ = madvise(address, Int(end - start), MADV_DONTNEED)
    }

    deinit {
        if let base = mapping.baseAddress { munmap(UnsafeMutableRawPointer(mutating: base), mapping.count) }
    }
}
