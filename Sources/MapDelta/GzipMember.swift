@preconcurrency import CZlib
import Foundation
import MapModel
import MapPlatform

/// One gzip file of a single member (RFC 1952): header, raw deflate stream, CRC-32 and
/// length. See-through deltas diff the inflated content and rebuild the exact compressed
/// bytes with zlib and the recorded ``DeflateRecipe``; everything streams in 1 MiB chunks.
package enum GzipMember {
    /// Where the parts of a gzip file lie, and what it holds.
    package struct Layout: Sendable, Equatable {
        /// The header bytes as found (flags, time, name and all), rebuilt as is.
        package var header: [UInt8]
        /// Bytes of the raw deflate stream after the header.
        package var deflateLength: Int64
        /// Bytes of the inflated content.
        package var inflatedSize: Int64
    }

    /// Whether the file starts like a gzip member (magic `1f 8b`, method deflate).
    package static func looksLikeGzip(_ path: String) -> Bool {
        guard let file = try? SystemFile.openForReading(path) else { return false }
        var magic = [UInt8](repeating: 0, count: 3)
        let read = magic.withUnsafeMutableBytes { (try? file.readChunk(into: $0, at: 0)) ?? 0 }
        return read == 3 && magic == [0x1F, 0x8B, 0x08]
    }

    /// The length of the gzip header at the start of `bytes`, or `nil` when it is not a
    /// complete, well-formed header.
    static func headerLength(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 10, bytes[0] == 0x1F, bytes[1] == 0x8B, bytes[2] == 8, bytes[3] & 0xE0 == 0 else { return nil }
        let flags = bytes[3]
        var index = 10
        if flags & 0x04 != 0 {  // FEXTRA
            guard bytes.count >= index + 2 else { return nil }
            index += 2 + Int(bytes[index]) | Int(bytes[index + 1]) << 8
        }
        for flag: UInt8 in [0x08, 0x10] where flags & flag != 0 {  // FNAME, FCOMMENT: zero-terminated
            guard let end = bytes[min(index, bytes.count)...].firstIndex(of: 0) else { return nil }
            index = end + 1
        }
        if flags & 0x02 != 0 { index += 2 }  // FHCRC
        return index <= bytes.count ? index : nil
    }

    /// Inflates the single-member gzip file at `path` into a new file at `output` and
    /// returns its layout. Throws ``PatchError/corrupt(detail:)`` for anything but exactly
    /// one well-formed member whose CRC and length match.
    package static func inflate(_ path: String, into output: String) throws -> Layout {
        let input = try SystemFile.openForReading(path)
        let size = try input.size()
        var head = [UInt8](repeating: 0, count: Int(min(size, 64 << 10)))
        let got = try head.withUnsafeMutableBytes { try input.readChunk(into: $0, at: 0) }
        guard let headerLength = headerLength(Array(head.prefix(got))) else {
            throw PatchError.corrupt(detail: "\(path) has no gzip header that this decoder reads")
        }
        let out = try SystemFile.createOrTruncate(output)
        var stream = z_stream()
        guard inflateInit2_(&stream, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw PatchError.codec(path: path, message: "zlib cannot start inflating")
        }
        defer { inflateEnd(&stream) }
        let chunk = 1 << 20
        let inBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { inBuffer.deallocate() }
        let outBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { outBuffer.deallocate() }
        var offset = Int64(headerLength)
        var crc = crc32(0, nil, 0)
        var inflated: Int64 = 0
        var ended = false
        while !ended {
            let n = try input.readChunk(into: inBuffer, at: offset)
            guard n > 0 else { throw PatchError.corrupt(detail: "\(path): the deflate stream ends early") }
            stream.next_in = inBuffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.avail_in = uInt(n)
            repeat {
                stream.next_out = outBuffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.avail_out = uInt(chunk)
                let status = CZlib.inflate(&stream, Z_NO_FLUSH)
                guard status == Z_OK || status == Z_STREAM_END else {
                    throw PatchError.corrupt(detail: "\(path): not a valid deflate stream (zlib \(status))")
                }
                let produced = chunk - Int(stream.avail_out)
                let part = UnsafeRawBufferPointer(rebasing: outBuffer[0..<produced])
                try out.writeAll(part)
                crc = crc32(crc, part.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(produced))
                inflated += Int64(produced)
                if status == Z_STREAM_END { ended = true; break }
            } while stream.avail_out == 0 || stream.avail_in > 0
            offset += Int64(n) - Int64(stream.avail_in)
        }
        var trailer = [UInt8](repeating: 0, count: 8)
        let trailerRead = try trailer.withUnsafeMutableBytes { try input.readChunk(into: $0, at: offset) }
        let storedCRC = UInt32(trailer[0]) | UInt32(trailer[1]) << 8 | UInt32(trailer[2]) << 16 | UInt32(trailer[3]) << 24
        let storedSize = UInt32(trailer[4]) | UInt32(trailer[5]) << 8 | UInt32(trailer[6]) << 16 | UInt32(trailer[7]) << 24
        guard trailerRead == 8, offset + 8 == size else {
            throw PatchError.corrupt(detail: "\(path) is not exactly one gzip member")
        }
        guard storedCRC == UInt32(crc), storedSize == UInt32(truncatingIfNeeded: inflated) else {
            throw PatchError.corrupt(detail: "\(path): the gzip trailer does not match its content")
        }
        try out.sync()
        return Layout(header: Array(head.prefix(headerLength)), deflateLength: offset - Int64(headerLength), inflatedSize: inflated)
    }

    /// Writes the gzip file `recipe` describes for the inflated content in `input`: the
    /// recorded header, zlib's raw deflate stream with the recorded parameters, then CRC-32
    /// and length, handing the bytes to `output` in chunks.
    package static func deflate(_ input: SystemFile, recipe: DeflateRecipe,
                                output: (UnsafeRawBufferPointer) throws -> Void) throws {
        try recipe.header.withUnsafeBytes { try output($0) }
        var crc = crc32(0, nil, 0)
        var total: Int64 = 0
        try DeflateRecipe.stream(input, parameters: recipe.parameters, onInput: { part in
            crc = crc32(crc, part.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(part.count))
            total += Int64(part.count)
        }, output: output)
        var trailer = [UInt8](repeating: 0, count: 8)
        for i in 0..<4 {
            trailer[i] = UInt8(truncatingIfNeeded: UInt32(crc) >> (8 * i))
            trailer[4 + i] = UInt8(truncatingIfNeeded: UInt32(truncatingIfNeeded: total) >> (8 * i))
        }
        try trailer.withUnsafeBytes { try output($0) }
    }
}

/// How zlib rebuilds one gzip file byte for byte: its header and the deflate parameters
/// that reproduce its stream (checked by the publisher before a see-through patch is made).
package struct DeflateRecipe: Sendable, Equatable {
    /// zlib's `deflateInit2` parameters (raw deflate, 32 kB window).
    package struct Parameters: Sendable, Equatable, Hashable {
        /// Compression level, 0–9.
        package var level: Int32
        /// Memory level, 1–9 (zlib's default is 8).
        package var memLevel: Int32
        /// Strategy (`Z_DEFAULT_STRATEGY`, `Z_FILTERED`, …).
        package var strategy: Int32

        package init(level: Int32, memLevel: Int32 = 8, strategy: Int32 = Z_DEFAULT_STRATEGY) {
            self.level = level
            self.memLevel = memLevel
            self.strategy = strategy
        }
    }

    /// The gzip header bytes.
    package var header: [UInt8]
    /// The deflate parameters.
    package var parameters: Parameters
    /// Bytes of the inflated content (bounds the delta decoder).
    package var inflatedSize: Int64

    /// A recipe.
    package init(header: [UInt8], parameters: Parameters, inflatedSize: Int64) {
        self.header = header
        self.parameters = parameters
        self.inflatedSize = inflatedSize
    }

    /// The parameters tried, most common first (gzip, Python and most tools use level 6
    /// or 9 with zlib's defaults).
    package static let candidates: [Parameters] = [6, 9, 1, 5, 4, 3, 2, 7, 8].map { Parameters(level: $0) }
        + [6, 9].map { Parameters(level: $0, memLevel: 9) }

    /// The recipe as stored before the zstd frame in a see-through payload:
    /// `level, memLevel, strategy, 0, u32 header length, u64 inflated size` (little-endian),
    /// then the header bytes.
    package var encoded: [UInt8] {
        var out: [UInt8] = [UInt8(parameters.level), UInt8(parameters.memLevel), UInt8(parameters.strategy), 0]
        out += withUnsafeBytes(of: UInt32(header.count).littleEndian, Array.init)
        out += withUnsafeBytes(of: UInt64(inflatedSize).littleEndian, Array.init)
        return out + header
    }

    /// Reads a recipe from the start of a payload; returns it and its encoded length.
    package static func decode(from file: SystemFile, at offset: Int64, within length: Int64) throws -> (DeflateRecipe, Int64) {
        var fixed = [UInt8](repeating: 0, count: 16)
        guard length >= 16, try fixed.withUnsafeMutableBytes({ try file.readChunk(into: $0, at: offset) }) == 16 else {
            throw PatchError.truncated(detail: "see-through payload ends inside its recipe")
        }
        let headerLength = Int64(fixed[4]) | Int64(fixed[5]) << 8 | Int64(fixed[6]) << 16 | Int64(fixed[7]) << 24
        var inflated: Int64 = 0
        for i in 0..<8 { inflated |= Int64(fixed[8 + i]) << (8 * i) }
        guard (1...9).contains(fixed[0]) || fixed[0] == 0, (1...9).contains(fixed[1]), fixed[2] <= 4,
              headerLength >= 10, headerLength <= 64 << 10, 16 + headerLength < length, inflated >= 0 else {
            throw PatchError.corrupt(detail: "see-through payload has an invalid recipe")
        }
        var header = [UInt8](repeating: 0, count: Int(headerLength))
        guard try header.withUnsafeMutableBytes({ try file.readChunk(into: $0, at: offset + 16) }) == Int(headerLength),
              GzipMember.headerLength(header) == header.count else {
            throw PatchError.corrupt(detail: "see-through payload has an invalid gzip header")
        }
        let recipe = DeflateRecipe(header: header,
                                   parameters: Parameters(level: Int32(fixed[0]), memLevel: Int32(fixed[1]), strategy: Int32(fixed[2])),
                                   inflatedSize: inflated)
        return (recipe, 16 + headerLength)
    }

    /// Deflates all of `input` (from its start) with `parameters` as a raw stream, handing
    /// each input chunk to `onInput` and each output chunk to `output`.
    package static func stream(_ input: SystemFile, parameters: Parameters,
                               onInput: (UnsafeRawBufferPointer) -> Void = { _ in },
                               output: (UnsafeRawBufferPointer) throws -> Void) throws {
        var stream = z_stream()
        guard deflateInit2_(&stream, parameters.level, Z_DEFLATED, -15, parameters.memLevel, parameters.strategy,
                            ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw PatchError.codec(path: input.path, message: "zlib refuses deflate parameters \(parameters)")
        }
        defer { deflateEnd(&stream) }
        let chunk = 1 << 20
        let inBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { inBuffer.deallocate() }
        let outBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { outBuffer.deallocate() }
        var offset: Int64 = 0
        while true {
            let n = try input.readChunk(into: inBuffer, at: offset)
            offset += Int64(n)
            onInput(UnsafeRawBufferPointer(rebasing: inBuffer[0..<n]))
            let flush = n < chunk ? Z_FINISH : Z_NO_FLUSH
            stream.next_in = inBuffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.avail_in = uInt(n)
            var status: Int32
            repeat {
                stream.next_out = outBuffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.avail_out = uInt(chunk)
                status = CZlib.deflate(&stream, flush)
                guard status != Z_STREAM_ERROR else { throw PatchError.codec(path: input.path, message: "zlib deflate failed") }
                try output(UnsafeRawBufferPointer(rebasing: outBuffer[0..<(chunk - Int(stream.avail_out))]))
            } while stream.avail_out == 0
            if flush == Z_FINISH {
                guard status == Z_STREAM_END else { throw PatchError.codec(path: input.path, message: "zlib did not finish the stream") }
                return
            }
        }
    }

    /// The first candidate whose raw deflate of `inflated` equals the `length` bytes of
    /// `original` at `offset`, compared as they are produced (a mismatch stops that
    /// candidate at once); `nil` when zlib reproduces the stream with none of them.
    package static func find(inflated: SystemFile, original: SystemFile, offset: Int64, length: Int64) -> Parameters? {
        struct Mismatch: Error {}
        let compare = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { compare.deallocate() }
        for candidate in candidates {
            var position: Int64 = 0
            do {
                try stream(inflated, parameters: candidate) { produced in
                    var done = 0
                    while done < produced.count {
                        let want = min(compare.count, produced.count - done)
                        guard position + Int64(want) <= length,
                              try original.readChunk(into: UnsafeMutableRawBufferPointer(rebasing: compare[0..<want]),
                                                     at: offset + position) == want,
                              memcmp(compare.baseAddress!, produced.baseAddress! + done, want) == 0 else { throw Mismatch() }
                        done += want
                        position += Int64(want)
                    }
                }
                if position == length { return candidate }
            } catch {
                continue
            }
        }
        return nil
    }
}
