package import Foundation
import SystemPackage

/// Walks a folder of regular files and directories.
package enum FileTree {
    /// Why a folder cannot be taken as a file tree.
    package struct Problem: Error, CustomStringConvertible {
        /// One line naming the path and the problem.
        package let description: String
    }

    /// Relative paths and sizes of every regular file below `root`, sorted by path bytes.
    /// Symlinks, devices, sockets and FIFOs are refused: a map tree holds none.
    package static func files(in root: URL) throws -> [(path: String, size: Int64)] {
        try files(in: root.path)
    }

    /// Relative paths and sizes of every regular file below the folder `root`.
    package static func files(in root: String) throws -> [(path: String, size: Int64)] {
        try filesWithStatus(in: root).map { ($0.path, $0.status.size) }
    }

    /// Relative paths and status (`lstat`) of every regular file below the folder `root`,
    /// sorted by path bytes: one `stat` per file, for callers that need more than its size.
    package static func filesWithStatus(in root: String) throws -> [(path: String, status: FileStatus)] {
        var result: [(String, FileStatus)] = []
        try walk(root, prefix: "", into: &result, checked: false)
        return result.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
    }

    /// `checked`: whether `directory` is known to be a folder (its parent's walk found it
    /// one by `lstat`), so it is not checked again.
    private static func walk(_ directory: String, prefix: String, into result: inout [(String, FileStatus)], checked: Bool) throws {
        for name in try names(in: directory, checked: checked) {
            let full = directory + "/" + name
            let relative = prefix.isEmpty ? name : prefix + "/" + name
            guard let status = FileStatus.of(full) else {
                throw Problem(description: "cannot stat \(full): \(Errno.current.description)")
            }
            switch status.kind {
            case .file: result.append((relative, status))
            case .directory: try walk(full, prefix: relative, into: &result, checked: true)
            default: throw Problem(description: "\(full) is not a regular file or folder (symlinks and devices are not allowed)")
            }
        }
    }

    /// The entries of a folder by their exact bytes; a name that is not UTF-8 is refused
    /// (Foundation would turn its bad bytes into U+FFFD, naming a file that does not exist).
    private static func names(in directory: String, checked: Bool) throws -> [String] {
        if !checked, FileStatus.of(directory)?.kind == .symbolicLink {
            throw Problem(description: "\(directory) is a symbolic link, not a folder")
        }
        let entries: [[UInt8]]
        do {
            entries = try FileSystem.entryNames(directory)
        } catch {
            throw Problem(description: "cannot read folder \(directory): \(error.reason)")
        }
        return try entries.map { bytes in
            guard let name = String(validating: bytes, as: UTF8.self) else {
                let shown = String(decoding: bytes, as: UTF8.self)
                throw Problem(description: "\(directory)/\(shown): the name is not valid UTF-8; rename the file")
            }
            return name
        }
    }
}
