import Crypto
import Foundation

/// Streaming SHA-256 of files: reads in 1 MiB chunks, never the whole file.
package enum FileHashing {
    /// The chunk size used when reading files for hashing.
    static let chunkSize = 1 << 20

    /// The lowercase hex SHA-256 and the length of the file at `url`.
    public static func sha256(ofFileAt url: URL) throws -> (hex: String, size: Int64) {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var hasher = SHA256()
        var size: Int64 = 0
        while let chunk = try handle.read(upToCount: chunkSize), !chunk.isEmpty {
            hasher.update(data: chunk)
            size += Int64(chunk.count)
        }
        return (hasher.finalize().hexString, size)
    }

    /// The lowercase hex SHA-256 of `data`.
    public static func sha256(of data: Data) -> String {
        SHA256.hash(data: data).hexString
    }
}

extension Digest {
    /// The digest as lowercase hexadecimal.
    var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.byteCount * 2)
        for byte in self {
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
