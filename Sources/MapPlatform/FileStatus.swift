#if canImport(Darwin)
    import Darwin
#elseif canImport(Android)
    import Android
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What `lstat(2)` says of a path: its kind, size and modification time. The one place that
/// knows `st_mtim` (Linux) from `st_mtimespec` (Darwin).
package struct FileStatus: Sendable, Hashable {
    /// The kinds of entries a folder holds, as far as MapLoader cares.
    package enum Kind: Sendable, Hashable { case file, directory, symbolicLink, other }

    /// The entry's kind (a symbolic link is not followed).
    package var kind: Kind
    /// Its size in bytes.
    package var size: Int64
    /// Its last modification, in seconds since 1970.
    package var modified: Double
    /// Its device and inode, which identify hard links of one file.
    package var identity: FileIdentity
    /// How many names (hard links) the file has.
    package var links: Int

    /// The status of `path` without following a final symbolic link; `nil` when it does not exist
    /// or cannot be read.
    package static func of(_ path: String) -> FileStatus? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return FileStatus(info)
    }

    /// The status of an open descriptor.
    package static func of(descriptor: Int32) -> FileStatus? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        return FileStatus(info)
    }

    private init(_ info: stat) {
        switch info.st_mode & S_IFMT {
        case S_IFREG: kind = .file
        case S_IFDIR: kind = .directory
        case S_IFLNK: kind = .symbolicLink
        default: kind = .other
        }
        size = Int64(info.st_size)
        #if canImport(Darwin)
            modified = Double(info.st_mtimespec.tv_sec) + Double(info.st_mtimespec.tv_nsec) / 1e9
        #else
            modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        #endif
        identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        links = Int(info.st_nlink)
    }
}

/// A file's device and inode: equal for every hard link of one file.
package struct FileIdentity: Sendable, Hashable {
    /// The device number.
    package var device: UInt64
    /// The inode number.
    package var inode: UInt64
}
