import Crypto
import Foundation
import MapModel
import MapPlatform

/// Decoding one zstd frame in one pass into a file mapped for writing: the decoder holds no
/// window on its heap however large the file (a streaming decoder holds one as large as
/// the content). Frames of more than ``PatchRun/mappedAbove`` bytes take this path: a
/// whole see-through expansion, a whole cross-file frame and a plain delta of a raw file.
extension PatchRun {
    /// The payload `expansion`, one zstd frame of `size` bytes of content, mapped and checked
    /// (``ZstdDelta/checkWholeFrame(_:size:displayPath:)``) before a byte of disk is
    /// reserved for it, and the file at `path` mapped to decode it into; nil where this file
    /// system cannot reserve and map the file (the caller streams instead).
    func mappedFrame(_ expansion: PatchManifest.Payload, size: Int64, into path: String, displayPath: String) throws
        -> (MappedFile, MappedOutput)?
    {
        guard expansion.length > 0 else { throw PatchError.truncated(detail: "the expansion of \(displayPath) has no frame") }
        let frame = try MappedFile(patch.file, offset: expansion.offset, length: expansion.length)
        try ZstdDelta.checkWholeFrame(frame.bytes, size: size, displayPath: displayPath)
        return try MappedOutput.attempt(creating: path, size: size).map { (frame, $0) }
    }

    /// Decodes one zstd `frame` into `output`, a file mapped for writing
    /// (``ZstdDelta/decodeFrame(_:prefix:into:displayPath:)``): no window on the heap
    /// however large the file. Returns its SHA-256 when `digest` asks for it, and flushes
    /// it when `sync` does (for a checkpoint, or a durable file). Progress jumps to the end
    /// once the frame is decoded.
    mutating func decodeMapped(
        _ frame: MappedFile, prefix: UnsafeRawBufferPointer?, into output: MappedOutput, digest: Bool, sync: Bool,
        displayPath: String
    ) throws -> SHA256Hash? {
        try ZstdDelta.decodeFrame(frame.bytes, prefix: prefix, into: output.bytes, displayPath: displayPath)
        mappedFrames += 1
        var hash: SHA256Hash?
        if digest {
            var hasher = SHA256Hasher()
            hasher.update(UnsafeRawBufferPointer(output.bytes))
            hash = hasher.finalize()
        }
        if sync { try output.sync() }
        return hash
    }

    /// Decodes `frame`, one zstd frame of `target`'s content against `prefix`, in one pass
    /// into `destination` mapped for writing, where the target is larger than
    /// ``mappedAbove`` and the file system can reserve and map it, and checks its SHA-256
    /// as ``decode(_:prefix:windowCover:target:destination:)`` does for a streamed one.
    /// Returns false, having written nothing, where the frame is to be streamed instead. A
    /// frame that fails leaves no file behind (it was reserved at its full size).
    mutating func decodeMapped(
        _ frame: PatchManifest.Payload, prefix: UnsafeRawBufferPointer, target: PatchManifest.Target, destination: String
    ) throws -> Bool {
        guard target.size > mappedAbove,
            let (mapped, output) = try mappedFrame(frame, size: target.size, into: destination, displayPath: target.path)
        else { return false }
        do {
            let hash = try decodeMapped(mapped, prefix: prefix, into: output, digest: true, sync: durable, displayPath: target.path)!
            guard hash == target.sha256 ?? hash else {
                throw PatchError.outputMismatch(
                    path: target.path, expectedSHA256: target.producedDigest.hex,
                    foundSHA256: hash.hex, expectedSize: target.size, foundSize: target.size)
            }
            decoded = hash
            done += target.size
            return true
        } catch {
            FileSystem.remove(destination)
            throw error
        }
    }
}
