import Foundation
import MapModel
package import MapPlatform
import SystemPackage

/// Puts verified old files into the new tree: a hard link (`link(2)`) when the file system
/// allows it, else a streamed, hashed copy (fsync'ed when `durable`).
package enum TreeLinker {
    /// Links `source` to `destination`, or copies it when linking fails (another device,
    /// no hard-link support, link limit). A copy is checked against `sha256` and `size`.
    /// Returns true when it linked.
    @discardableResult
    package static func linkOrCopy(
        source: String, destination: String, displayPath: String,
        sha256: SHA256Hash, size: Int64, durable: Bool = true
    ) throws -> Bool {
        do {
            try FileSystem.link(source, destination)
            return true
        } catch  where error.errno == .fileExists {
            throw error
        } catch {
            // Another device, no hard links, the link limit: copy below.
        }
        let writer = try HashingFileWriter(path: destination, displayPath: displayPath, limit: size)
        try SystemFile.openForReading(source).forEachChunk { try writer.write($0) }
        let (hash, written) = try writer.finish(sync: durable)
        guard hash == sha256, written == size else {
            throw PatchError.outputMismatch(
                path: displayPath, expectedSHA256: sha256.hex, foundSHA256: hash.hex,
                expectedSize: size, foundSize: written)
        }
        return false
    }
}
