package import Foundation
import MapModel
package import MapPlatform

#if PackagedZstd
    import libzstd
#else
    import CZstd
#endif
extension ZstdDelta {
    /// Decodes the single zstd frame in `delta` into a new file at `output`, using `old` as
    /// the raw-content prefix (nil for a plain zstd frame). Reads frames written by
    /// `ZstdDelta.encode` or by `zstd --patch-from=old` and streams the output in chunks;
    /// the old file is memory-mapped read-only (the prefix must be addressable as a
    /// whole). The output is fsync'ed.
    package static func decode(delta: URL, old: URL?, to output: URL) throws {
        let input = try SystemFile.openForReading(delta.path)
        let prefix = try old.map { try MappedFile.source($0.path, displayPath: $0.path) }
        let out = try SystemFile.createOrTruncate(output.path)
        try decodeFrame(
            from: input, offset: 0, length: try input.size(), prefix: prefix?.bytes,
            expectedSize: nil, displayPath: output.path
        ) { try out.writeAll($0) }
        try out.sync()
    }

    /// Decodes the one zstd frame at `offset..<offset+length` of `input` in chunks and hands
    /// each decoded chunk to `output`.
    ///
    /// With `expectedSize` the frame header must declare exactly that content size, the
    /// decoder's window is capped to cover it (so memory stays within the file size even
    /// for a damaged frame), and output beyond it is refused. Bytes after the frame, an
    /// incomplete frame or any zstd error throw.
    ///
    /// `windowCover` (default: `expectedSize`) is the span the frame's window may cover: a
    /// segment's window reaches back over its old window too.
    package static func decodeFrame(
        from input: SystemFile, offset: Int64, length: Int64,
        prefix: UnsafeRawBufferPointer?, expectedSize: Int64?, windowCover: Int64? = nil,
        displayPath: String, output: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        func fail(_ message: String) -> PatchError { .codec(path: displayPath, message: message) }
        guard let dctx = ZSTD_createDCtx() else { throw fail("cannot create a decoder (out of memory)") }
        defer { ZSTD_freeDCtx(dctx) }
        let cover = windowCover ?? expectedSize
        let windowLimit = min(cover.flatMap { Self.windowLog(forContentSize: $0) } ?? maxWindowLog, maxWindowLog)
        var ret = ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, Int32(windowLimit))
        if isError(ret) { throw fail(errorName(ret)) }
        if let prefix, prefix.count > 0 {
            ret = ZSTD_DCtx_refPrefix(dctx, prefix.baseAddress, prefix.count)
            if isError(ret) { throw fail(errorName(ret)) }
        }

        let inCapacity = ZSTD_DStreamInSize()
        let outCapacity = max(ZSTD_DStreamOutSize(), 1 << 20)
        let inBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: inCapacity, alignment: 16)
        defer { inBuffer.deallocate() }
        let outBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: outCapacity, alignment: 16)
        defer { outBuffer.deallocate() }

        var consumed: Int64 = 0
        var produced: Int64 = 0
        var frameDone = false
        while consumed < length {
            let want = Int(min(Int64(inCapacity), length - consumed))
            let got = try input.readChunk(
                into: UnsafeMutableRawBufferPointer(rebasing: inBuffer[0..<want]),
                at: offset + consumed)
            guard got == want else {
                throw PatchError.truncated(detail: "payload for \(displayPath) ends after \(consumed + Int64(got)) of \(length) bytes")
            }
            if consumed == 0, let expectedSize {
                // zstd's stable API (an app's zstd package exposes no other).
                let declared = ZSTD_getFrameContentSize(inBuffer.baseAddress, got)
                guard declared != ZSTD_CONTENTSIZE_ERROR else { throw fail("no valid frame header") }
                guard declared != ZSTD_CONTENTSIZE_UNKNOWN else { throw fail("frame declares no content size") }
                guard declared == UInt64(expectedSize) else {
                    throw fail("frame declares \(declared) bytes, target is \(expectedSize)")
                }
            }
            consumed += Int64(got)
            var inb = ZSTD_inBuffer(src: inBuffer.baseAddress, size: got, pos: 0)
            var outb: ZSTD_outBuffer
            repeat {
                guard !frameDone else { throw fail("data after the end of the frame") }
                outb = ZSTD_outBuffer(dst: outBuffer.baseAddress, size: outCapacity, pos: 0)
                ret = ZSTD_decompressStream(dctx, &outb, &inb)
                if isError(ret) { throw fail(errorName(ret)) }
                if outb.pos > 0 {
                    produced += Int64(outb.pos)
                    if let expectedSize, produced > expectedSize {
                        throw fail("frame decodes to more than the target's \(expectedSize) bytes")
                    }
                    try output(UnsafeRawBufferPointer(rebasing: outBuffer[0..<outb.pos]))
                }
                if ret == 0 { frameDone = true }
            } while inb.pos < inb.size || (outb.pos == outb.size && !frameDone)
        }
        guard frameDone else { throw PatchError.truncated(detail: "payload for \(displayPath) ends inside its zstd frame") }
        if let expectedSize, produced != expectedSize {
            throw fail("frame decodes to \(produced) bytes, target is \(expectedSize)")
        }
    }
}
