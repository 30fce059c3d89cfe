import MapModel
package import MapPlatform

#if PackagedZstd
    import libzstd
#else
    import CZstd
#endif

/// The zstd frames inside a file of a format MapLoader does not parse (a PMTiles archive
/// of zstd tiles, as its header allows), as a see-through view expands and rebuilds them
/// (``EncodingParts/View/scannedZstd``): found by a scan, decompressed in place, and each
/// rebuilt byte for byte by compressing its content again with the parameters the
/// publisher checked. Both halves are here: the publisher's scan and check, the client's
/// scan, expansion and rebuild.
///
/// A frame is rebuilt exactly only by the zstd version that made it (zstd's output changes
/// between releases: tiles of 5–400 kB compressed by zstd 1.5.7 and 1.5.4 at one level
/// differed in 8 of 20 trials), so the publisher sees through only the frames its own
/// libzstd reproduces, the recipe names that version, and a site lists
/// ``PatchCodecs/zstdFrames`` for the patch: a client of another version takes the full
/// archive instead.
package enum ZstdFrames {
    /// How one frame is made again: the level, and the header's checksum and content-size
    /// flags (read off the original frame).
    package struct Parameters: Sendable, Hashable, CustomStringConvertible {
        // Two bytes (a recipe segment holds an optional set: ``DeflateRecipe/Segment`` stays
        // within 40 bytes): the level, and the flags as ``encoded`` writes them.
        private var levelByte: Int8
        private var flags: UInt8

        /// The compression level (-5...22).
        package var level: Int32 { Int32(levelByte) }
        /// Whether the frame ends with a checksum of its content.
        package var checksum: Bool { flags & 1 != 0 }
        /// Whether the frame's header says its content's size.
        package var contentSize: Bool { flags & 2 != 0 }

        package init(level: Int32, checksum: Bool, contentSize: Bool) {
            levelByte = Int8(clamping: level)
            flags = (checksum ? 1 : 0) | (contentSize ? 2 : 0)
        }

        /// The levels a frame is tried at, the default first.
        package static let levels: [Int32] = [3] + Array(1...2) + Array(4...22) + Array((-5)...(-1)).reversed()

        /// As a recipe's parameter set holds it: `i8 level, u8 flags (1: checksum, 2:
        /// content size), u8 0`.
        package var encoded: [UInt8] { [UInt8(bitPattern: levelByte), flags, 0] }

        /// The parameters a recipe's set spells; nil for one out of range.
        package init?(encoded bytes: some Collection<UInt8>) {
            let set = Array(bytes)
            guard set.count == 3, set[1] & ~3 == 0, set[2] == 0 else { return nil }
            let level = Int32(Int8(bitPattern: set[0]))
            guard Self.levels.contains(level) else { return nil }
            self.init(level: level, checksum: set[1] & 1 != 0, contentSize: set[1] & 2 != 0)
        }

        package var description: String { "zstd level \(level)\(checksum ? " +checksum" : "")\(contentSize ? "" : " -size")" }
    }

    /// The version of the libzstd this build links (`ZSTD_versionNumber`, 10504 for 1.5.4):
    /// the one that rebuilds frames it checked.
    package static var version: UInt32 { UInt32(ZSTD_versionNumber()) }

    /// The version as people write it (1.5.4).
    package static func versionName(_ number: UInt32) -> String { "\(number / 10000).\(number / 100 % 100).\(number % 100)" }

    /// The zstd frames of the file at `path`, in file order, at most
    /// ``DeflateStreams/maxStreams``: each a frame (magic to checksum) that decodes whole
    /// with no dictionary. Deterministic, so the publisher and every client find the same
    /// frames; bytes spent on candidates that are not frames are bounded as for the deflate
    /// scan (``DeflateStreams/scanWasteFactor``).
    package static func scan(in path: String) -> [DeflateStreams.Stream] {
        guard let mapped = try? MappedFile(path: path) else { return [] }
        return scan(mapped.bytes)
    }

    /// ``scan(in:)`` over bytes in memory.
    package static func scan(_ bytes: UnsafeRawBufferPointer) -> [DeflateStreams.Stream] {
        guard let base = bytes.baseAddress else { return [] }
        var streams: [DeflateStreams.Stream] = []
        var wasted: Int64 = 0
        let budget = Int64(bytes.count) * DeflateStreams.scanWasteFactor + (1 << 20)
        // The frames' content may come to no more than the file's expansion may: a frame of
        // a few bytes a block can claim gigabytes (zstd's RLE blocks), and the scan stops
        // there rather than decode them, as an expansion would refuse them.
        var content = DeflateRecipe.expansionLimit(ofFileOfSize: Int64(bytes.count))
        var index = 0
        while index + 9 <= bytes.count, wasted < budget, content > 0, streams.count < DeflateStreams.maxStreams {
            guard bytes[index] == 0x28, bytes[index + 1] == 0xB5, bytes[index + 2] == 0x2F, bytes[index + 3] == 0xFD,
                ZSTD_getDictID_fromFrame(base + index, bytes.count - index) == 0
            else {
                index += 1
                continue
            }
            let length = ZSTD_findFrameCompressedSize(base + index, bytes.count - index)
            let decoded = ZstdDelta.isError(length) ? nil : decodes(UnsafeRawBufferPointer(start: base + index, count: length), within: content)
            guard let decoded else {
                wasted += Int64(ZstdDelta.isError(length) ? 1 : length)
                index += 1
                continue
            }
            guard decoded <= content else { break }
            content -= decoded
            streams.append(DeflateStreams.Stream(offset: Int64(index), length: Int64(length)))
            index += length
        }
        return streams
    }

    /// The content length of `frame` when it decodes to its end (its checksum checked where
    /// it has one); nil when it does not. Decoding stops past `limit` bytes of content,
    /// which is then what it returns beyond.
    private static func decodes(_ frame: UnsafeRawBufferPointer, within limit: Int64) -> Int64? {
        var produced: Int64 = 0
        do {
            try decompress(frame) { chunk in
                produced += Int64(chunk.count)
                if produced > limit { throw Beyond() }
            }
        } catch is Beyond {
            return produced
        } catch {
            return nil
        }
        return produced
    }

    /// A frame's content runs past the scan's limit.
    private struct Beyond: Error {}

    /// Decompresses `frame`, exactly one frame, handing the content to `output` in chunks;
    /// a frame that does not decode whole throws. Returns the content's length.
    @discardableResult
    package static func decompress(_ frame: UnsafeRawBufferPointer, output: (UnsafeRawBufferPointer) throws -> Void) throws -> Int64 {
        guard let dctx = ZSTD_createDCtx() else { throw PatchError.codec(path: "", message: "zstd cannot start decoding") }
        defer { ZSTD_freeDCtx(dctx) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: ZSTD_DStreamOutSize(), alignment: 16)
        defer { buffer.deallocate() }
        var input = ZSTD_inBuffer(src: frame.baseAddress, size: frame.count, pos: 0)
        var produced: Int64 = 0
        var remaining = 1
        while remaining != 0 {
            var out = ZSTD_outBuffer(dst: buffer.baseAddress, size: buffer.count, pos: 0)
            remaining = ZSTD_decompressStream(dctx, &out, &input)
            if ZstdDelta.isError(remaining) { throw PatchError.corrupt(detail: "a zstd frame does not decode (\(ZstdDelta.errorName(remaining)))") }
            try output(UnsafeRawBufferPointer(rebasing: buffer[0..<out.pos]))
            produced += Int64(out.pos)
            if remaining != 0, input.pos == input.size, out.pos < out.size {
                throw PatchError.corrupt(detail: "a zstd frame ends early")
            }
        }
        guard input.pos == input.size else { throw PatchError.corrupt(detail: "bytes after a zstd frame") }
        return produced
    }

    /// Decompresses the frame `stream` of `file` (a stream ``scan(in:)`` found).
    static func expand(_ file: SystemFile, _ stream: DeflateStreams.Stream, output: (UnsafeRawBufferPointer) throws -> Void) throws {
        let mapped = try MappedFile(file, offset: stream.offset, length: stream.length)
        try decompress(mapped.bytes, output: output)
    }

    /// Compresses `length` bytes of `input` from `offset` as one frame with `parameters`,
    /// in one call over the mapped content (as a one-shot `ZSTD_compress` does), handing
    /// the frame to `output` in chunks.
    package static func compress(
        _ input: SystemFile, offset: Int64, length: Int64, parameters: Parameters,
        output: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let mapped = length > 0 ? try MappedFile(input, offset: offset, length: length) : nil
        let content = mapped?.bytes ?? UnsafeRawBufferPointer(start: nil, count: 0)
        guard let cctx = ZSTD_createCCtx() else { throw PatchError.codec(path: input.path, message: "zstd cannot start compressing") }
        defer { ZSTD_freeCCtx(cctx) }
        for (parameter, value) in [
            (ZSTD_c_compressionLevel, parameters.level), (ZSTD_c_checksumFlag, parameters.checksum ? 1 : 0),
            (ZSTD_c_contentSizeFlag, parameters.contentSize ? 1 : 0),
        ] where ZstdDelta.isError(ZSTD_CCtx_setParameter(cctx, parameter, value)) {
            throw PatchError.codec(path: input.path, message: "zstd refuses \(parameters)")
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: ZSTD_CStreamOutSize(), alignment: 16)
        defer { buffer.deallocate() }
        var source = ZSTD_inBuffer(src: content.baseAddress, size: content.count, pos: 0)
        var remaining = 1
        while remaining != 0 {
            var out = ZSTD_outBuffer(dst: buffer.baseAddress, size: buffer.count, pos: 0)
            remaining = ZSTD_compressStream2(cctx, &out, &source, ZSTD_e_end)
            if ZstdDelta.isError(remaining) {
                throw PatchError.codec(path: input.path, message: "zstd: \(ZstdDelta.errorName(remaining))")
            }
            try output(UnsafeRawBufferPointer(rebasing: buffer[0..<out.pos]))
        }
    }

    /// The first level that compresses `length` bytes of `expansion` at `offset` into
    /// exactly the frame of `originalLength` bytes at `originalOffset` of `original`,
    /// compared as it is produced (a mismatch stops a level at once); nil when none does,
    /// or the frame uses a dictionary. `first`, a level that reproduced another frame of
    /// the file, is tried before the others.
    package static func parameters(
        reproducing original: SystemFile, at originalOffset: Int64, length originalLength: Int64,
        from expansion: SystemFile, at offset: Int64, length: Int64, first: Int32? = nil
    ) -> Parameters? {
        guard let frame = try? MappedFile(original, offset: originalOffset, length: originalLength), frame.bytes.count >= 5 else {
            return nil
        }
        // The frame header descriptor (RFC 8878, 3.1.1.1.1): content size flag, single
        // segment, checksum, dictionary id.
        let descriptor = frame.bytes[4]
        guard descriptor & 3 == 0 else { return nil }
        let flags = (checksum: descriptor & 0x04 != 0, contentSize: descriptor >> 6 != 0 || descriptor & 0x20 != 0)
        let levels = (first.map { [$0] } ?? []) + Parameters.levels.filter { $0 != first }
        for level in levels {
            let candidate = Parameters(level: level, checksum: flags.checksum, contentSize: flags.contentSize)
            var position = 0
            do {
                try compress(expansion, offset: offset, length: length, parameters: candidate) { produced in
                    guard position + produced.count <= frame.bytes.count,
                        produced.elementsEqual(UnsafeRawBufferPointer(rebasing: frame.bytes[position..<(position + produced.count)]))
                    else { throw Mismatch() }
                    position += produced.count
                }
            } catch {
                continue
            }
            if position == frame.bytes.count { return candidate }
        }
        return nil
    }

    /// A candidate's output differs from the original.
    private struct Mismatch: Error {}
}
