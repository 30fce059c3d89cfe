import Foundation
import MapModel
import MapPlatform
import SystemPackage

/// Puts verified old files into the new tree: a hard link (`link(2)`) when the file system
/// allows it, else a streamed, hashed, fsync'ed copy.
package enum TreeLinker {
    /// Links `source` to `destination`, or copies it when linking fails (another device,
    /// no hard-link support, link limit). A copy is checked against `sha256` and `size`.
    /// Returns true when it linked.
    @discardableResult
    package static func linkOrCopy(source: String, destination: String, displayPath: String,
                           sha256: SHA256Hash, size: Int64) throws -> Bool {
        do {
            try FileSystem.link(source, destination)
            return true
        } catch where error.errno == .fileExists {
            throw error
        } catch {
            // Another device, no hard links, the link limit: copy below.
        }
        let input = try SystemFile.openForReading(source)
        let writer = try HashingFileWriter(path: destination, displayPath: displayPath, limit: size)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = try input.readChunk(into: buffer)
            if n == 0 { break }
            try writer.write(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
        let (hash, written) = try writer.finish()
        guard hash == sha256, written == size else {
            throw PatchError.outputMismatch(path: displayPath, expectedSHA256: sha256.hex, foundSHA256: hash.hex,
                                            expectedSize: size, foundSize: written)
        }
        return false
    }
}
