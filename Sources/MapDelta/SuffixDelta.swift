import Foundation
import MapModel
package import MapPlatform

#if PackagedZstd
    import libzstd
#else
    import CZstd
#endif
/// A bsdiff-class delta: the publisher matches the new file against a suffix array of the
/// old one, and writes per step "add `add` bytes (each the old byte plus a difference),
/// then `copy` new bytes, then move in the old file by `seek`". The differences are mostly
/// zero, or repeat where numbers shifted (coordinates, ids), which zstd's matching alone
/// misses and the zstd frames of the three streams then compress well.
///
/// Payload: `u64 control length, u64 differences length, u64 extra length` (the three
/// zstd frames' lengths), then the frames: controls (`u64 add, u64 copy, i64 seek` per
/// step, little-endian), differences, extra bytes. Decoding holds three stream decoders
/// and the mapped old file, not the new file.
///
/// The filtered form (``PatchEncoding/filteredSuffixDelta``) starts with one byte, the
/// stride `d` (1…8), and each extra byte is then sent as its difference from the new
/// file's byte `d` before it (0 before the file's start), as xz's delta filter does: new
/// numbers in columns of `d`-byte fields (coordinates) differ little from their
/// neighbours, and zstd compresses the differences a third smaller.
///
/// The sparse form (``PatchEncoding/sparseSuffixDelta``, ``Form/sparse``) sends the add
/// bytes as replacements instead of differences: its stride byte (0…8), then four frame
/// lengths (controls, runs, replaced bytes, extra bytes) and the four frames. The runs
/// frame holds pairs of LEB128 varints, (kept, replaced) with replaced ≥ 1, over the add
/// bytes in order: `kept` bytes are the old file's, the next `replaced` come from the
/// replaced-bytes frame; after the last pair every add byte is the old file's. A few
/// scattered edits in a large file then cost their own bytes, where a differences frame
/// costs about 4 bytes for every 128 KiB of zeros (zstd's largest block).
package enum SuffixDelta {
    /// The strides a filtered payload may name.
    package static let strides = 1...8

    /// How a payload's bytes are laid out; a wire value names one (``PatchEncoding/suffixForm``).
    package struct Form: Sendable, Hashable {
        /// Whether a stride byte starts the payload.
        package var strideByte: Bool
        /// Whether that byte may be 0, for no filter.
        package var zeroStride: Bool
        /// Whether the add bytes come as runs and replaced bytes (two frames) instead of
        /// one frame of differences.
        package var sparse: Bool

        /// ``PatchEncoding/suffixDelta``: three frames, no filter.
        package static let plain = Form(strideByte: false, zeroStride: false, sparse: false)
        /// ``PatchEncoding/filteredSuffixDelta``: a stride of 1…8, then three frames.
        package static let filtered = Form(strideByte: true, zeroStride: false, sparse: false)
        /// The expansion of a see-through suffix delta (``PatchEncoding/suffixDeflateDelta``):
        /// a stride of 0…8, then three frames.
        package static let expansion = Form(strideByte: true, zeroStride: true, sparse: false)
        /// ``PatchEncoding/sparseSuffixDelta``: a stride of 0…8, then four frames.
        package static let sparse = Form(strideByte: true, zeroStride: true, sparse: true)
    }

    /// Decodes the payload at `offset` (`length` bytes) of the given `form` against `old`,
    /// handing the new file's bytes to `output` in chunks; at most `targetSize` bytes.
    package static func decode(
        from file: SystemFile, offset: Int64, length: Int64, old: UnsafeRawBufferPointer,
        targetSize: Int64, displayPath: String, form: Form,
        output: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        guard form.strideByte else {
            return try decode(
                from: file, offset: offset, length: length, old: old, targetSize: targetSize, displayPath: displayPath,
                stride: 0, sparse: form.sparse, output: output)
        }
        guard length > 1, let stride = try DeflateStreams.read(file, at: offset, count: 1).first else {
            throw PatchError.truncated(detail: "suffix delta of \(displayPath)")
        }
        guard (form.zeroStride && stride == 0) || strides.contains(Int(stride)) else {
            throw PatchError.corrupt(detail: "suffix delta of \(displayPath): a stride of \(stride) bytes")
        }
        try decode(
            from: file, offset: offset + 1, length: length - 1, old: old, targetSize: targetSize, displayPath: displayPath,
            stride: Int(stride), sparse: form.sparse, output: output)
    }

    /// Adds `old`'s bytes to `chunk`'s, byte by byte (wrapping), 32 at a time: the
    /// compiler cannot vectorize the plain loop, as the two buffers might overlap (they
    /// never do: one is the mapped old file, the other a private buffer).
    package static func addBytes(into chunk: UnsafeMutableRawBufferPointer, from old: UnsafeRawBufferPointer) {
        let count = min(chunk.count, old.count)
        guard count > 0, let target = chunk.baseAddress, let source = old.baseAddress else { return }
        var index = 0
        while index + 32 <= count {
            let sum =
                target.loadUnaligned(fromByteOffset: index, as: SIMD32<UInt8>.self)
                &+ source.loadUnaligned(fromByteOffset: index, as: SIMD32<UInt8>.self)
            target.storeBytes(of: sum, toByteOffset: index, as: SIMD32<UInt8>.self)
            index += 32
        }
        while index < count {
            chunk[index] = chunk[index] &+ old[index]
            index += 1
        }
    }

    /// The steps of a payload whose extra bytes are filtered with `stride` (0: not), its
    /// add bytes `sparse` (runs and replaced bytes) or as differences.
    private static func decode(
        from file: SystemFile, offset: Int64, length: Int64, old: UnsafeRawBufferPointer,
        targetSize: Int64, displayPath: String, stride: Int, sparse: Bool,
        output: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        func corrupt(_ detail: String) -> PatchError { .corrupt(detail: "suffix delta of \(displayPath): \(detail)") }
        let frames = try frames(in: file, offset: offset, length: length, count: sparse ? 4 : 3, displayPath: displayPath)
        let controls = frames[0]
        let adds: AddBytes =
            sparse
            ? .replaced(Replacements(runs: frames[1], bytes: frames[2], limit: targetSize, path: displayPath))
            : .differences(frames[1])
        let extra = frames[frames.count - 1]
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 18, alignment: 16)
        defer { buffer.deallocate() }
        var history = History()
        var step = [UInt8](repeating: 0, count: 24)
        var oldPosition: Int64 = 0
        var written: Int64 = 0
        var steps: Int64 = 0
        while try step.withUnsafeMutableBytes({ try controls.read(into: $0, allowEnd: true) }) {
            // Every step but the last produces a byte: more steps than that is a payload
            // built to keep the client busy.
            steps += 1
            guard steps - 1 <= targetSize else { throw corrupt("more steps than the file has bytes") }
            var fields = ByteReader(step)
            let add = try fields.length()
            let copy = try fields.length()
            let seek = Int64(bitPattern: try fields.u64())
            guard add >= 0, copy >= 0, add <= targetSize - written, copy <= targetSize - written - add,
                oldPosition >= 0, add <= Int64(old.count) - oldPosition
            else { throw corrupt("a step is out of range") }
            var done: Int64 = 0
            while done < add {
                let count = Int(min(Int64(buffer.count), add - done))
                let chunk = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
                try adds.fill(chunk, old: UnsafeRawBufferPointer(rebasing: old[Int(oldPosition + done)...]))
                if stride > 0 { history.record(chunk) }
                try output(UnsafeRawBufferPointer(chunk))
                done += Int64(count)
            }
            done = 0
            while done < copy {
                let count = Int(min(Int64(buffer.count), copy - done))
                let chunk = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
                _ = try extra.read(into: chunk, allowEnd: false)
                if stride > 0 {
                    history.unfilter(chunk, stride: stride)
                    history.record(chunk)
                }
                try output(UnsafeRawBufferPointer(chunk))
                done += Int64(count)
            }
            written += add + copy
            oldPosition += add
            let (moved, overflow) = oldPosition.addingReportingOverflow(seek)
            guard !overflow else { throw corrupt("a seek overflows") }
            oldPosition = moved
        }
        guard written == targetSize, try adds.atEnd(), try extra.atEnd() else {
            throw corrupt("the streams do not end with the file")
        }
    }

    /// The `count` frames of a payload: their lengths (u64 each), then the frames, which
    /// fill the payload exactly.
    private static func frames(
        in file: SystemFile, offset: Int64, length: Int64, count: Int, displayPath: String
    ) throws -> [FrameReader] {
        var head = [UInt8](repeating: 0, count: 8 * count)
        guard length >= Int64(head.count),
            try head.withUnsafeMutableBytes({ try file.readChunk(into: $0, at: offset) }) == head.count
        else {
            throw PatchError.truncated(detail: "suffix delta of \(displayPath)")
        }
        var reader = ByteReader(head)
        var lengths: [Int64] = []
        for _ in 0..<count { lengths.append(try reader.length()) }
        guard lengths.allSatisfy({ $0 > 0 && $0 <= length }), Int64(head.count) + lengths.reduce(0, +) == length else {
            throw PatchError.corrupt(detail: "suffix delta of \(displayPath): lengths do not add up")
        }
        var frames: [FrameReader] = []
        var start = offset + Int64(head.count)
        for frameLength in lengths {
            frames.append(try FrameReader(file, offset: start, length: frameLength, path: displayPath))
            start += frameLength
        }
        return frames
    }

    /// The last 8 bytes of the new file produced so far (zeros before its start), which
    /// the filtered extra bytes are differences from.
    struct History {
        private var last: UInt64 = 0

        /// Keeps the end of `chunk`, just produced.
        mutating func record(_ chunk: UnsafeMutableRawBufferPointer) {
            for byte in chunk.suffix(8) { last = last << 8 | UInt64(byte) }
        }

        /// Turns differences into bytes in place: each byte plus the one `stride` before.
        func unfilter(_ chunk: UnsafeMutableRawBufferPointer, stride: Int) {
            for index in 0..<min(stride, chunk.count) {
                chunk[index] = chunk[index] &+ UInt8(truncatingIfNeeded: last >> (8 * UInt64(stride - 1 - index)))
            }
            guard chunk.count > stride else { return }
            for index in stride..<chunk.count { chunk[index] = chunk[index] &+ chunk[index - stride] }
        }
    }

    /// Reads one zstd frame of a file as a byte stream, a buffer at a time.
    final class FrameReader {
        private let file: SystemFile
        private let path: String
        private let dctx: OpaquePointer
        private var position: Int64
        private let end: Int64
        private let input = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 17, alignment: 16)
        private var inputBuffer = ZSTD_inBuffer(src: nil, size: 0, pos: 0)
        private let output = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 17, alignment: 16)
        private var available = 0..<0
        private var frameDone = false

        init(_ file: SystemFile, offset: Int64, length: Int64, path: String) throws {
            guard let dctx = ZSTD_createDCtx() else { throw PatchError.codec(path: path, message: "cannot create a decoder") }
            self.dctx = dctx
            self.file = file
            self.path = path
            position = offset
            end = offset + length
            // Plain frames: the window a level up to 19 uses (8 MiB) is all a reader needs.
            ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, 24)
        }

        deinit {
            ZSTD_freeDCtx(dctx)
            input.deallocate()
            output.deallocate()
        }

        /// Fills `target` completely; returns false when the frame ended before any byte
        /// (only with `allowEnd`); a frame ending in the middle throws.
        func read(into target: UnsafeMutableRawBufferPointer, allowEnd: Bool) throws -> Bool {
            var filled = 0
            while filled < target.count {
                if available.isEmpty {
                    guard try refill() else {
                        if filled == 0 && allowEnd { return false }
                        throw PatchError.truncated(detail: "a stream of \(path)'s suffix delta ends early")
                    }
                    continue
                }
                let count = min(available.count, target.count - filled)
                target.baseAddress!.advanced(by: filled).copyMemory(
                    from: output.baseAddress!.advanced(by: available.lowerBound),
                    byteCount: count)
                available = available.lowerBound + count..<available.upperBound
                filled += count
            }
            return true
        }

        /// The next byte; a frame ending before it throws.
        func byte() throws -> UInt8 {
            var byte: UInt8 = 0
            _ = try withUnsafeMutableBytes(of: &byte) { try read(into: $0, allowEnd: false) }
            return byte
        }

        /// Whether the frame is fully consumed.
        func atEnd() throws -> Bool { try available.isEmpty && !refill() }

        /// Decodes more output; false at the end of the frame.
        private func refill() throws -> Bool {
            while true {
                if frameDone { return false }
                if inputBuffer.pos == inputBuffer.size {
                    let want = Int(min(Int64(input.count), end - position))
                    guard want > 0 else { throw PatchError.truncated(detail: "a stream of \(path)'s suffix delta ends early") }
                    let got = try file.readChunk(into: UnsafeMutableRawBufferPointer(rebasing: input[0..<want]), at: position)
                    guard got == want else { throw PatchError.truncated(detail: "\(path)'s suffix delta ends early") }
                    position += Int64(got)
                    inputBuffer = ZSTD_inBuffer(src: input.baseAddress, size: got, pos: 0)
                }
                var out = ZSTD_outBuffer(dst: output.baseAddress, size: output.count, pos: 0)
                let status = ZSTD_decompressStream(dctx, &out, &inputBuffer)
                if ZstdDelta.isError(status) { throw PatchError.codec(path: path, message: ZstdDelta.errorName(status)) }
                if status == 0 {
                    frameDone = true
                    guard position == end, inputBuffer.pos == inputBuffer.size else {
                        throw PatchError.corrupt(detail: "data after a stream of \(path)'s suffix delta")
                    }
                }
                if out.pos > 0 {
                    available = 0..<out.pos
                    return true
                }
            }
        }
    }
}
