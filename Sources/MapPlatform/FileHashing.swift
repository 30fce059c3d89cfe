import Crypto
package import Foundation
import SystemPackage

/// Streaming SHA-256 of files: reads in 1 MiB chunks, never the whole file.
package enum FileHashing {
    /// The lowercase hex SHA-256 and the length of the file at `url`.
    package static func sha256(ofFileAt url: URL) throws(SystemError) -> (hex: String, size: Int64) {
        let (hash, size) = try hash(ofFile: url.path)
        return (hash.hex, size)
    }

    /// The SHA-256 and the length of the file at `path`.
    package static func hash(ofFile path: String) throws(SystemError) -> (hash: SHA256Hash, size: Int64) {
        let file = try SystemFile.openForReading(path)
        var hasher = SHA256()
        var size: Int64 = 0
        do {
            try file.forEachChunk { chunk in
                hasher.update(bufferPointer: chunk)
                size += Int64(chunk.count)
            }
        } catch {
            throw error as? SystemError ?? SystemError("read", path, .ioError)
        }
        return (SHA256Hash(hasher.finalize()), size)
    }

    /// The lowercase hex SHA-256 of `data`.
    package static func sha256(of data: Data) -> String {
        SHA256.hash(data: data).hexString
    }
}

extension Digest {
    /// The digest as lowercase hexadecimal.
    package var hexString: String { SHA256Hash.hex(self) }
}
