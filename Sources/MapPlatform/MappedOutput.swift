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

/// A new file of a known size mapped for writing (`mmap(PROT_READ | PROT_WRITE, MAP_SHARED)`).
///
/// A decoder that must address everything it has written so far (zstd's single-pass decoder,
/// whose matches reach back over the whole output) writes into the page cache instead of
/// a window on the heap: the kernel writes the pages back and drops them under memory
/// pressure, as it does the mapped old file's. ``sync()`` (`fsync`) flushes what was written
/// through the mapping.
///
/// The file's blocks are reserved before it is mapped (``SystemFile/reserve(_:)``), so a
/// full disk is an error here (`ENOSPC`) rather than a `SIGBUS` on a page written later.
/// Where blocks cannot be reserved (Darwin, some file systems) or a file cannot be mapped
/// for writing, ``attempt(creating:size:)`` gives nil and the caller decodes another way.
/// Unmapped on deinit.
package final class MappedOutput {
    /// The mapped bytes, ``size`` of them.
    package let bytes: UnsafeMutableRawBufferPointer
    /// The file, open for reading and writing.
    package let file: SystemFile

    /// Creates (or truncates) `path`, makes it `size` bytes with its blocks reserved, and
    /// maps it. A size of 0 or one beyond the address space is refused with `EINVAL`, and
    /// a file whose blocks cannot be reserved with `ENOTSUP` from "reserve".
    package init(creating path: String, size: Int64) throws(SystemError) {
        guard size > 0, size <= Int64(Int.max / 2) else { throw SystemError("map", path, .invalidArgument) }
        file = try SystemFile.createForUpdate(path)
        guard try file.reserve(size) else { throw SystemError("reserve", path, .notSupported) }
        guard let base = mmap(nil, Int(size), PROT_READ | PROT_WRITE, MAP_SHARED, file.descriptor.rawValue, 0), base != MAP_FAILED
        else {
            throw SystemError("mmap", path, .current)
        }
        bytes = UnsafeMutableRawBufferPointer(start: base, count: Int(size))
    }

    /// ``init(creating:size:)``, or `nil` where the file's blocks cannot be reserved or the
    /// file system cannot map a file for writing (the file is then left empty); every other
    /// failure (`ENOSPC` among them) throws.
    package static func attempt(creating path: String, size: Int64) throws(SystemError) -> MappedOutput? {
        do {
            return try MappedOutput(creating: path, size: size)
        } catch {
            guard error.operation == "mmap" || (error.operation == "reserve" && error.errno == .notSupported) else { throw error }
            _ = try? SystemFile.createOrTruncate(path)
            return nil
        }
    }

    /// Flushes the pages written through the mapping (`msync`, as POSIX asks before
    /// `fsync`), then the file's data and metadata, to disk.
    package func sync() throws(SystemError) {
        if msync(bytes.baseAddress, bytes.count, MS_SYNC) != 0 { throw SystemError("msync", file.path, .current) }
        try file.sync()
    }

    deinit { munmap(bytes.baseAddress, bytes.count) }
}
