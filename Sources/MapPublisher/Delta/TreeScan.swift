import Foundation
import MapDelta
import MapModel
import MapPlatform

/// The regular files of a release folder with their sizes and SHA-256 digests.
struct TreeScan {
    /// One file of a tree.
    struct File: Sendable, Equatable {
        /// Path relative to the tree root.
        var path: String
        /// Size in bytes.
        var size: Int64
        /// SHA-256 of the content.
        var sha256: SHA256Hash
        /// Where the bytes are when not at the tree's root: the same bytes another tree holds.
        var location: String? = nil
    }

    /// The tree's root directory.
    let root: URL
    /// Every file, sorted by path.
    let files: [File]
    /// Files by path (by its bytes: NFC and NFD names are two files).
    let byPath: [PathKey: File]

    /// Scans and hashes every file below `root` (sorted by the paths' UTF-8 bytes, as
    /// tree hashes are); anything but regular files and directories, or a name a patch
    /// cannot carry, throws.
    init(root: URL) throws {
        self.root = root
        let listing: [(path: String, size: Int64)]
        do {
            listing = try FileTree.files(in: root)
        } catch let problem as FileTree.Problem {
            throw PatchBuildError.unsupportedFile(detail: problem.description)
        }
        var files: [File] = []
        for entry in listing {
            guard PatchPath.isSafe(entry.path) else { throw PatchBuildError.unsupportedPath(path: entry.path) }
            let (hex, size) = try FileHashing.sha256(ofFileAt: root.appendingPathComponent(entry.path))
            files.append(File(path: entry.path, size: size, sha256: SHA256Hash(hex: hex)!))
        }
        self.files = files
        byPath = Dictionary(uniqueKeysWithValues: files.map { (PathKey($0.path), $0) })
    }

    /// A tree whose files are hashed already (as they were listed or unpacked), sorted by
    /// path; each is at `root`, or where `elsewhere` says (the same bytes in another tree).
    init(root: URL, files entries: [FileEntry], elsewhere: [PathKey: String] = [:]) throws {
        self.root = root
        var files: [File] = []
        for entry in entries {
            guard PatchPath.isSafe(entry.path) else { throw PatchBuildError.unsupportedPath(path: entry.path) }
            guard let hash = SHA256Hash(hex: entry.sha256) else {
                throw PatchBuildError.unsupportedFile(detail: "\(entry.path): '\(entry.sha256)' is no SHA-256 digest")
            }
            files.append(File(path: entry.path, size: entry.size, sha256: hash, location: elsewhere[PathKey(entry.path)]))
        }
        self.files = files
        var byPath: [PathKey: File] = [:]
        for file in files {
            guard byPath.updateValue(file, forKey: PathKey(file.path)) == nil else {
                throw PatchBuildError.unsupportedFile(detail: "\(file.path) is listed twice")
            }
        }
        self.byPath = byPath
    }

    /// The absolute path of `file`.
    func fullPath(_ file: File) -> String { file.location ?? root.path + "/" + file.path }
}
