import Crypto
import MapModel
package import MapPlatform
/// Writes one new file in chunks, hashing exactly the bytes it writes, and refuses to
/// grow past the size the target declares, so a damaged payload cannot fill the disk.
package final class HashingFileWriter {
    private let file: SystemFile
    private let displayPath: String
    private let limit: Int64
    private var hasher = SHA256()
    /// Bytes written so far.
    private(set) var written: Int64 = 0

    /// Creates `path` (which must not exist) for a target of at most `limit` bytes.
    package init(path: String, displayPath: String, limit: Int64) throws {
        file = try SystemFile.create(path)
        self.displayPath = displayPath
        self.limit = limit
    }

    /// Appends `chunk`.
    package func write(_ chunk: UnsafeRawBufferPointer) throws {
        guard Int64(chunk.count) <= limit - written else {
            throw PatchError.corrupt(detail: "payload for \(displayPath) is longer than the target's \(limit) bytes")
        }
        try file.writeAll(chunk)
        hasher.update(bufferPointer: chunk)
        written += Int64(chunk.count)
    }

    /// fsyncs the file and returns the SHA-256 of the bytes written and the file's size
    /// on disk as `fstat` reports it after the sync.
    package func finish() throws -> (sha256: SHA256Hash, size: Int64) {
        try file.sync()
        return (SHA256Hash(hasher.finalize()), try file.size())
    }
}
