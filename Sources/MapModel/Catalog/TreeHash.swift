import Crypto
import Foundation
import MapPlatform

/// One file of an installed or published tree.
package struct FileEntry: Sendable, Hashable, Codable {
    /// Path relative to the group's folder, `/`-separated.
    package var path: String
    /// Length in bytes.
    package var size: Int64
    /// SHA-256, lowercase hex.
    package var sha256: String

    /// A file entry.
    package init(path: String, size: Int64, sha256: String) {
        self.path = path
        self.size = size
        self.sha256 = sha256
    }
}

/// The identity of a file tree: SHA-256 over `"<sha256> <size> <path>\n"` for every file,
/// sorted by the path's UTF-8 bytes. Two trees with the same files and bytes have the
/// same hash whatever their timestamps or archive encoding.
package enum TreeHash {
    /// The tree hash of `entries` (any order).
    package static func of(_ entries: [FileEntry]) -> String {
        var hasher = SHA256()
        for entry in sorted(entries) {
            hasher.update(data: Data("\(entry.sha256) \(entry.size) \(entry.path)\n".utf8))
        }
        return hasher.finalize().hexString
    }

    /// `entries` in tree-hash order.
    package static func sorted(_ entries: [FileEntry]) -> [FileEntry] {
        entries.sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
    }
}
