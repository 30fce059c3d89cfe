import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// Walks a folder of regular files and directories.
package enum FileTree {
    /// Why a folder cannot be taken as a file tree.
    public struct Problem: Error, CustomStringConvertible {
        /// One line naming the path and the problem.
        public let description: String
    }

    /// Relative paths and sizes of every regular file below `root`, sorted by path bytes.
    /// Symlinks, devices, sockets and FIFOs are refused: a map tree holds none.
    public static func files(in root: URL) throws -> [(path: String, size: Int64)] {
        var result: [(String, Int64)] = []
        try walk(root.path, prefix: "", into: &result)
        return result.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
    }

    /// ``FileEntry`` for every file below `root` (hashing each, streamed), sorted by path.
    public static func entries(in root: URL) throws -> [FileEntry] {
        try files(in: root).map { file in
            let hash = try FileHashing.sha256(ofFileAt: root.appendingPathComponent(file.path))
            return FileEntry(path: file.path, size: hash.size, sha256: hash.hex)
        }
    }

    private static func walk(_ directory: String, prefix: String, into result: inout [(String, Int64)]) throws {
        for name in try names(in: directory) {
            let full = directory + "/" + name
            let relative = prefix.isEmpty ? name : prefix + "/" + name
            var info = stat()
            guard lstat(full, &info) == 0 else {
                throw Problem(description: "cannot stat \(full): \(String(cString: strerror(errno)))")
            }
            switch info.st_mode & S_IFMT {
            case S_IFREG: result.append((relative, Int64(info.st_size)))
            case S_IFDIR: try walk(full, prefix: relative, into: &result)
            default: throw Problem(description: "\(full) is not a regular file or folder (symlinks and devices are not allowed)")
            }
        }
    }

    /// The entries of a folder by their exact bytes; a name that is not UTF-8 is refused
    /// (Foundation would turn its bad bytes into U+FFFD, naming a file that does not exist).
    private static func names(in directory: String) throws -> [String] {
        if prefixIsLink(directory) {
            throw Problem(description: "\(directory) is a symbolic link, not a folder")
        }
        guard let stream = opendir(directory) else {
            throw Problem(description: "cannot read folder \(directory): \(String(cString: strerror(errno)))")
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                Array(raw.prefix(while: { $0 != 0 }))
            }
            if bytes == [0x2E] || bytes == [0x2E, 0x2E] { continue }
            guard let name = String(validating: bytes, as: UTF8.self) else {
                let shown = String(decoding: bytes, as: UTF8.self)
                throw Problem(description: "\(directory)/\(shown): the name is not valid UTF-8; rename the file")
            }
            names.append(name)
        }
        return names
    }

    private static func prefixIsLink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK
    }
}
