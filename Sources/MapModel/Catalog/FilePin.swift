package import Foundation
import MapPlatform

/// A pin of one file by signed metadata: its SHA-256 and length.
package struct FilePin: Sendable, Hashable, Codable {
    /// SHA-256 of the file, lowercase hex.
    package var sha256: String
    /// Length of the file in bytes.
    package var size: Int64

    /// A pin.
    package init(sha256: String, size: Int64) {
        self.sha256 = sha256
        self.size = size
    }

    /// Whether `data` is the pinned file.
    package func matches(_ data: Data) -> Bool { Int64(data.count) == size && FileHashing.sha256(of: data) == sha256 }

    /// The pinned file unpacked from the zstd frame `frame` (a delta when `prefix` is the
    /// file it was made from), or `nil` when the frame does not give exactly the pinned
    /// bytes: the frame must declare the pinned length before anything is allocated.
    package func unpack(_ frame: Data, prefix: Data = Data()) -> Data? {
        guard size >= 0,
            let bytes = try? ZstdFrame.decompress(Array(frame), limit: Int(size), exactly: Int(size), prefix: Array(prefix))
        else { return nil }
        let data = Data(bytes)
        return matches(data) ? data : nil
    }

    /// Whether the hash is 64 lowercase hex digits (it names files in caches and on
    /// sites) and the length is within `sizes`.
    package func isWellFormed(sizes: ClosedRange<Int64>) -> Bool {
        sizes.contains(size) && Self.isHash(sha256)
    }

    /// Whether `text` is a SHA-256 as signed metadata writes it: 64 lowercase hex digits.
    /// Hashes name files (downloads, caches, a site's blobs and trees), so nothing else may
    /// pass for one: `././…/../../.bashrc` is 64 characters too.
    package static func isHash(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
