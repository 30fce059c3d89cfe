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
                try checkContentSize(UnsafeRawBufferPointer(rebasing: inBuffer[0..<got]), is: expectedSize, displayPath: displayPath)
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

extension ZstdDelta {
    /// Frames whose content is larger than this are decoded in one pass into a mapped output
    /// (``decodeFrame(_:prefix:into:displayPath:)``) rather than streamed: a streaming
    /// decoder holds a window as large as the content (up to 2 GiB) on the heap. At 32 MiB
    /// an apply stays within 64 MB of memory beyond the files it maps: with 64 MiB, the
    /// 55-61 MB cross-file frames of a 187 MB folder of gazetteer cuts held 70 MB.
    package static let streamedContentLimit: Int64 = 32 << 20

    /// Checks that the frame starting `bytes` declares exactly `size` bytes of content
    /// (zstd's stable API, the only one an app's zstd package exposes).
    package static func checkContentSize(_ bytes: UnsafeRawBufferPointer, is size: Int64, displayPath: String) throws {
        func fail(_ message: String) -> PatchError { .codec(path: displayPath, message: message) }
        let declared = bytes.baseAddress.map { ZSTD_getFrameContentSize($0, bytes.count) } ?? ZSTD_CONTENTSIZE_ERROR
        guard declared != ZSTD_CONTENTSIZE_ERROR else { throw fail("no valid frame header") }
        guard declared != ZSTD_CONTENTSIZE_UNKNOWN else { throw fail("frame declares no content size") }
        guard declared == UInt64(size) else { throw fail("frame declares \(declared) bytes, target is \(size)") }
    }

    /// Checks that `frame` is exactly one zstd frame (nothing after it, not cut short) that
    /// declares `size` bytes of content: what ``decodeFrame(_:prefix:into:displayPath:)``
    /// needs before its output is made.
    package static func checkWholeFrame(_ frame: UnsafeRawBufferPointer, size: Int64, displayPath: String) throws {
        try checkContentSize(frame, is: size, displayPath: displayPath)
        let frameLength = ZSTD_findFrameCompressedSize(frame.baseAddress, frame.count)
        if isError(frameLength) {
            throw PatchError.truncated(detail: "payload for \(displayPath) ends inside its zstd frame (\(errorName(frameLength)))")
        }
        guard frameLength == frame.count else { throw PatchError.codec(path: displayPath, message: "data after the end of the frame") }
    }

    /// Decodes `frame`, exactly one zstd frame, into `output` in one pass, with `prefix` as
    /// the raw-content prefix (nil for a plain frame).
    ///
    /// zstd's single-pass decoder reads its matches back out of the output itself and the
    /// mapped prefix, so it allocates no window whatever the frame's: the memory is its
    /// context (about 100 KB) and the pages of the mapped files. The frame is checked first
    /// (``checkWholeFrame(_:size:displayPath:)``); a damaged frame throws ``PatchError``.
    /// A wrong prefix decodes to other bytes (the frames carry no checksum): the caller's
    /// SHA-256 of the result catches it.
    package static func decodeFrame(
        _ frame: UnsafeRawBufferPointer, prefix: UnsafeRawBufferPointer?, into output: UnsafeMutableRawBufferPointer,
        displayPath: String
    ) throws {
        func fail(_ message: String) -> PatchError { .codec(path: displayPath, message: message) }
        guard let source = frame.baseAddress, let target = output.baseAddress else { throw fail("an empty frame or target") }
        try checkWholeFrame(frame, size: Int64(output.count), displayPath: displayPath)
        guard let dctx = ZSTD_createDCtx() else { throw fail("cannot create a decoder (out of memory)") }
        defer { ZSTD_freeDCtx(dctx) }
        if let prefix, prefix.count > 0 {
            let ret = ZSTD_DCtx_refPrefix(dctx, prefix.baseAddress, prefix.count)
            if isError(ret) { throw fail(errorName(ret)) }
        }
        let produced = ZSTD_decompressDCtx(dctx, target, output.count, source, frame.count)
        if isError(produced) { throw fail(errorName(produced)) }
        guard produced == output.count else { throw fail("frame decodes to \(produced) bytes, target is \(output.count)") }
    }
}
