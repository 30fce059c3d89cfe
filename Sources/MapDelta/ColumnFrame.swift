import Foundation
import MapModel
package import MapPlatform

#if PackagedZstd
    import libzstd
#else
    import CZstd
#endif
/// Columns of numbers compressed against what the client already has: `u32 frame length,
/// u32 columns length` (little-endian), then one zstd frame of the columns with a prefix
/// the client computes from its old file (the old file's layout or gather map). A scanned
/// see-through recipe and a gather map are sent this way.
package enum ColumnFrame {
    /// Reads a column frame at `offset` of `file` (within `length` bytes): the columns,
    /// at most `maxLength` bytes, and the bytes the frame took. `what` names it in errors.
    package static func decode(
        from file: SystemFile, at offset: Int64, within length: Int64, prefix: [UInt8], maxLength: Int,
        displayPath: String, what: String
    ) throws -> ([UInt8], Int64) {
        guard length >= 8 else { throw PatchError.truncated(detail: "see-through payload of \(displayPath) ends inside its \(what)") }
        let head = try DeflateStreams.read(file, at: offset, count: 8)
        let frameLength = Int64(head[0..<4].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        let columnsLength = Int(head[4..<8].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard frameLength > 0, 8 + frameLength <= length, columnsLength <= maxLength else {
            throw PatchError.corrupt(detail: "see-through payload of \(displayPath) has an invalid \(what) frame")
        }
        // Decoded in one call into the columns' own bytes: no decoder window beside them (the
        // columns of a million streams are 17 MB, and a window would double them).
        guard frameLength <= Int64(ZSTD_compressBound(maxLength)) else {
            throw PatchError.corrupt(detail: "see-through payload of \(displayPath) has an invalid \(what) frame")
        }
        let frame = try DeflateStreams.read(file, at: offset + 8, count: Int(frameLength))
        do {
            return (try ZstdFrame.decompress(frame, limit: maxLength, exactly: columnsLength, prefix: prefix), 8 + frameLength)
        } catch {
            throw PatchError.codec(path: displayPath, message: "its \(what) does not decode (\(error))")
        }
    }

    /// The head of a frame whose zstd frame is `frameLength` bytes and holds `columnsLength`.
    package static func head(frameLength: Int64, columnsLength: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt32(frameLength).littleEndian, Array.init) + withUnsafeBytes(of: UInt32(columnsLength).littleEndian, Array.init)
    }
}

extension SystemFile {
    /// Hands `length` bytes from `offset` to `output`, a `buffer` at a time.
    package func copy(
        from offset: Int64, length: Int64, buffer: UnsafeMutableRawBufferPointer,
        to output: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        var done: Int64 = 0
        while done < length {
            let want = Int(min(Int64(buffer.count), length - done))
            let part = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want])
            guard try readChunk(into: part, at: offset + done) == want else {
                throw PatchError.truncated(detail: "\(path) ends before the bytes to copy do")
            }
            try output(UnsafeRawBufferPointer(part))
            done += Int64(want)
        }
    }
}
