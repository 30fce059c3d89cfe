package import MapPlatform

extension MappedFile {
    /// Maps an old file that a patch reads; a missing file, a symbolic link or anything but
    /// a regular file is ``PatchError/sourceMissing(path:)`` naming `displayPath`.
    package static func source(_ path: String, displayPath: String) throws -> MappedFile {
        guard let file = try MappedFile(path: path) else { throw PatchError.sourceMissing(path: displayPath) }
        return file
    }
}
