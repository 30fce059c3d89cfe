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
package enum SuffixDelta {
    /// Bytes of the fixed header.
    package static let headerLength: Int64 = 24
    /// The strides a filtered payload may name.
    package static let strides = 1...8

    /// Decodes the payload at `offset` (`length` bytes) against `old`, handing the new
    /// file's bytes to `output` in chunks; at most `targetSize` bytes. A `filtered`
    /// payload (``PatchEncoding/filteredSuffixDelta``) starts with its stride (1…8); with
    /// `strideByteAlways` (the expansion of ``PatchEncoding/suffixDeflateDelta``) the
    /// stride byte may also be 0, for none.
    package static func decode(
        from file: SystemFile, offset: Int64, length: Int64, old: UnsafeRawBufferPointer,
        targetSize: Int64, displayPath: String, filtered: Bool = false, strideByteAlways: Bool = false,
        output: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        guard filtered || strideByteAlways else {
            return try decode(
                from: file, offset: offset, length: length, old: old, targetSize: targetSize, displayPath: displayPath,
                stride: 0, output: output)
        }
        guard length > 1, let stride = try DeflateStreams.read(file, at: offset, count: 1).first else {
            throw PatchError.truncated(detail: "suffix delta of \(displayPath)")
        }
        // 0 (no filter) is written only where the stride byte always stands (see-through).
        guard (strideByteAlways && stride == 0) || strides.contains(Int(stride)) else {
            throw PatchError.corrupt(detail: "suffix delta of \(displayPath): a stride of \(stride) bytes")
        }
        try decode(
            from: file, offset: offset + 1, length: length - 1, old: old, targetSize: targetSize, displayPath: displayPath,
            stride: Int(stride), output: output)
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

    /// The steps of a payload whose extra bytes are filtered with `stride` (0: not).
    private static func decode(
        from file: SystemFile, offset: Int64, length: Int64, old: UnsafeRawBufferPointer,
        targetSize: Int64, displayPath: String, stride: Int,
        output: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        func corrupt(_ detail: String) -> PatchError { .corrupt(detail: "suffix delta of \(displayPath): \(detail)") }
        var head = [UInt8](repeating: 0, count: Int(headerLength))
        guard length >= headerLength, try head.withUnsafeMutableBytes({ try file.readChunk(into: $0, at: offset) }) == head.count else {
            throw PatchError.truncated(detail: "suffix delta of \(displayPath)")
        }
        var reader = ByteReader(head)
        let lengths = [try reader.length(), try reader.length(), try reader.length()]
        guard lengths.allSatisfy({ $0 > 0 && $0 <= length }), headerLength + lengths.reduce(0, +) == length else {
            throw corrupt("lengths do not add up")
        }
        let controls = try FrameReader(file, offset: offset + headerLength, length: lengths[0], path: displayPath)
        let differences = try FrameReader(file, offset: offset + headerLength + lengths[0], length: lengths[1], path: displayPath)
        let extra = try FrameReader(
            file, offset: offset + headerLength + lengths[0] + lengths[1], length: lengths[2],
            path: displayPath)
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
                _ = try differences.read(into: chunk, allowEnd: false)
                addBytes(into: chunk, from: UnsafeRawBufferPointer(rebasing: old[Int(oldPosition + done)...]))
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
        guard written == targetSize, try differences.atEnd(), try extra.atEnd() else {
            throw corrupt("the streams do not end with the file")
        }
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
