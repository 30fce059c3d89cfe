@preconcurrency import CZlib
import Foundation
import MapModel
import MapPlatform

/// The raw deflate streams inside the compressed formats map data ships in, found by
/// parsing the container: gzip members (`.gz`, any number), zip entries of method 8
/// (shapefiles, KMZ, GeoPackage bundles), OSM PBF blobs (`zlib_data`) and PNG image data
/// (`IDAT` chunks: raster tiles). Everything
/// else in a file (headers, CRCs, lengths, central directories, protobuf framing) is
/// "raw" and kept byte for byte.
package enum DeflateStreams {
    /// One raw deflate stream: where it starts in the file and how many bytes it takes;
    /// for a PNG, the run of IDAT chunks holding the image's zlib stream (framing included).
    package struct Stream: Sendable, Equatable {
        package var offset: Int64
        package var length: Int64
        /// Set for a PNG run: how its chunks are cut.
        package var png: PNGRun?

        package init(offset: Int64, length: Int64, png: PNGRun? = nil) {
            self.offset = offset
            self.length = length
            self.png = png
        }
    }

    /// The most streams a file's list holds: one more than a recipe may have
    /// (``DeflateRecipe/maxSegments``), so that a file of more is known to be one, on the
    /// publisher (which keeps a byte-level delta) and on the client (which refuses a patch
    /// that would expand it), without a list of all of them in memory.
    package static let maxStreams = DeflateRecipe.maxSegments + 1

    /// The deflate streams of the file at `path`, in file order, at most ``maxStreams``;
    /// empty for a file of no known format or one that does not parse (then it is diffed
    /// byte by byte).
    package static func find(in path: String) -> [Stream] {
        guard let file = try? SystemFile.openForReading(path), let size = try? file.size(), size >= 18 else { return [] }
        var magic = [UInt8](repeating: 0, count: 16)
        guard (try? magic.withUnsafeMutableBytes { try file.readChunk(into: $0, at: 0) }) == 16 else { return [] }
        let streams: [Stream]?
        if magic[0] == 0x1F, magic[1] == 0x8B, magic[2] == 8 {
            streams = gzipStreams(file, size: size)
        } else if magic[0...3] == [0x50, 0x4B, 0x03, 0x04] {
            streams = zipStreams(file, size: size)
        } else if magic[0...1] == [0, 0], magic[4] == 0x0A {
            streams = pbfStreams(file, size: size)
        } else if magic[0..<8].elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            streams = pngStreams(file, size: size)
        } else {
            streams = nil
        }
        return streams ?? []
    }

    // MARK: - Containers

    /// gzip: members one after another (RFC 1952), each a header, a deflate stream and an
    /// 8-byte trailer.
    private static func gzipStreams(_ file: SystemFile, size: Int64) -> [Stream]? {
        var streams: [Stream] = []
        var offset: Int64 = 0
        while offset < size, streams.count < maxStreams {
            guard let header = try? read(file, at: offset, count: Int(min(size - offset, 64 << 10))),
                let headerLength = GzipMember.headerLength(header),
                let length = try? deflateLength(file, at: offset + Int64(headerLength), limit: size)
            else { return nil }
            streams.append(Stream(offset: offset + Int64(headerLength), length: length))
            offset += Int64(headerLength) + length + 8
        }
        return offset == size ? streams : nil
    }

    /// zip: local file headers from the start; method-8 entries are deflate streams (their
    /// end found by inflating, so data descriptors need no sizes). Parsing stops at the
    /// central directory or anything unexpected; what follows stays raw.
    private static func zipStreams(_ file: SystemFile, size: Int64) -> [Stream]? {
        var streams: [Stream] = []
        var offset: Int64 = 0
        while offset + 30 <= size, streams.count < maxStreams, let header = try? read(file, at: offset, count: 30),
            Array(header[0..<4]) == [0x50, 0x4B, 0x03, 0x04]
        {
            let flags = UInt16(header[6]) | UInt16(header[7]) << 8
            let method = UInt16(header[8]) | UInt16(header[9]) << 8
            let compressed = Int64(UInt32(header[18]) | UInt32(header[19]) << 8 | UInt32(header[20]) << 16 | UInt32(header[21]) << 24)
            let nameLength = Int64(header[26]) | Int64(header[27]) << 8
            let extraLength = Int64(header[28]) | Int64(header[29]) << 8
            let data = offset + 30 + nameLength + extraLength
            var length: Int64
            switch method {
            case 8:
                guard let found = try? deflateLength(file, at: data, limit: size) else { return streams }
                streams.append(Stream(offset: data, length: found))
                length = found
            case 0 where flags & 0x08 == 0 && compressed != 0xFFFF_FFFF:
                length = compressed
            default:
                return streams  // stored with a data descriptor, zip64, another method: the rest stays raw
            }
            offset = data + length
            if flags & 0x08 != 0 {  // a data descriptor: optional signature, CRC, two 32-bit sizes
                guard let descriptor = try? read(file, at: offset, count: 4) else { return streams }
                offset += descriptor == [0x50, 0x4B, 0x07, 0x08] ? 16 : 12
            }
        }
        return streams
    }

    /// OSM PBF: blocks of a 4-byte big-endian length, a `BlobHeader` and a `Blob` whose
    /// `zlib_data` (field 3) is a zlib stream: a 2-byte header, deflate, a 4-byte Adler-32.
    private static func pbfStreams(_ file: SystemFile, size: Int64) -> [Stream]? {
        var streams: [Stream] = []
        var offset: Int64 = 0
        while offset < size, streams.count < maxStreams {
            guard let prefix = try? read(file, at: offset, count: 4) else { return nil }
            let headerLength = Int64(prefix[0]) << 24 | Int64(prefix[1]) << 16 | Int64(prefix[2]) << 8 | Int64(prefix[3])
            guard headerLength > 0, headerLength < 64 << 10, offset + 4 + headerLength <= size,
                let header = try? read(file, at: offset + 4, count: Int(headerLength)),
                let dataSize = protobufField(3, in: header).flatMap({ $0.varint })
            else { return nil }
            let blob = offset + 4 + headerLength
            guard dataSize > 0, dataSize < 64 << 20, dataSize <= size - blob,
                let body = try? read(file, at: blob, count: Int(dataSize))
            else { return nil }
            if let zlib = protobufField(3, in: body)?.bytes, zlib.count > 6, body[zlib.lowerBound] & 0x0F == 8 {
                let start = blob + Int64(zlib.lowerBound) + 2
                guard let length = try? deflateLength(file, at: start, limit: blob + Int64(zlib.upperBound) - 4),
                    start + length + 4 == blob + Int64(zlib.upperBound)
                else { return nil }
                streams.append(Stream(offset: start, length: length))
            }
            offset = blob + dataSize
        }
        return streams
    }

    /// One field of a protobuf message: a varint value or the range of its bytes.
    private struct Field {
        var varint: Int64?
        var bytes: Range<Int>?
    }

    /// The first occurrence of field `number` at the top level of `message`.
    private static func protobufField(_ number: Int, in message: [UInt8]) -> Field? {
        var index = 0
        func varint() -> Int64? {
            var value: Int64 = 0
            var shift: Int64 = 0
            while index < message.count, shift < 64 {
                let byte = message[index]
                index += 1
                value |= Int64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            return nil
        }
        while index < message.count {
            guard let key = varint() else { return nil }
            let field = Int(key >> 3)
            switch key & 7 {
            case 0:
                guard let value = varint() else { return nil }
                if field == number { return Field(varint: value) }
            case 2:
                guard let length = varint(), length >= 0, length <= Int64(message.count - index) else { return nil }
                if field == number { return Field(bytes: index..<(index + Int(length))) }
                index += Int(length)
            case 1: index += 8
            case 5: index += 4
            default: return nil
            }
        }
        return nil
    }

    // MARK: - Streams

    static func read(_ file: SystemFile, at offset: Int64, count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let got = try bytes.withUnsafeMutableBytes { try file.readChunk(into: $0, at: offset) }
        guard got == count else { throw PatchError.truncated(detail: "\(file.path) ends inside a container header") }
        return bytes
    }

    /// The length of the raw deflate stream at `offset` (inflated and discarded), which
    /// must end before `limit`.
    static func deflateLength(_ file: SystemFile, at offset: Int64, limit: Int64) throws -> Int64 {
        var consumed: Int64 = 0
        try inflate(file, at: offset, limit: limit, consumed: &consumed) { _ in }
        return consumed
    }

    /// Inflates the raw deflate stream at `offset` of `file`, handing the content to
    /// `output` in chunks; `consumed` gets the stream's compressed length.
    static func inflate(
        _ file: SystemFile, at offset: Int64, limit: Int64, consumed: inout Int64,
        output: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        var stream = z_stream()
        guard inflateInit2_(&stream, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw PatchError.codec(path: file.path, message: "zlib cannot start inflating")
        }
        defer { inflateEnd(&stream) }
        let chunk = 1 << 18
        let inBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { inBuffer.deallocate() }
        let outBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { outBuffer.deallocate() }
        var position = offset
        while true {
            let want = Int(min(Int64(chunk), limit - position))
            guard want > 0 else { throw PatchError.corrupt(detail: "\(file.path): a deflate stream runs past its container") }
            let n = try file.readChunk(into: UnsafeMutableRawBufferPointer(rebasing: inBuffer[0..<want]), at: position)
            guard n > 0 else { throw PatchError.corrupt(detail: "\(file.path): a deflate stream ends early") }
            stream.next_in = inBuffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.avail_in = uInt(n)
            let status = try drain(&stream, into: outBuffer, what: "\(file.path): not a valid deflate stream", output: output)
            position += Int64(n) - Int64(stream.avail_in)
            if status == Z_STREAM_END {
                consumed = position - offset
                return
            }
        }
    }

    /// Inflates the input `stream` holds into `buffer`, a buffer at a time, handing the
    /// content to `output`, until the input is used or the stream ends; returns zlib's
    /// last status. A zlib error throws with `what` and the code.
    static func drain(
        _ stream: inout z_stream, into buffer: UnsafeMutableRawBufferPointer, what: String,
        output: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Int32 {
        var status: Int32
        repeat {
            stream.next_out = buffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.avail_out = uInt(buffer.count)
            status = CZlib.inflate(&stream, Z_NO_FLUSH)
            guard status == Z_OK || status == Z_STREAM_END else { throw PatchError.corrupt(detail: "\(what) (zlib \(status))") }
            try output(UnsafeRawBufferPointer(rebasing: buffer[0..<(buffer.count - Int(stream.avail_out))]))
        } while status != Z_STREAM_END && (stream.avail_out == 0 || stream.avail_in > 0)
        return status
    }

    /// Deflates `length` bytes of `input` from `offset` as one raw stream with `parameters`,
    /// handing the compressed bytes to `output`.
    /// `windowBits` is the window (8–15; PNG encoders shrink it for small images) and
    /// `onInput` sees every chunk of content deflated (a PNG run's Adler-32).
    static func deflate(
        _ input: SystemFile, offset: Int64, length: Int64, parameters: DeflateParameters,
        windowBits: Int32 = 15, onInput: (UnsafeRawBufferPointer) -> Void = { _ in },
        output: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        var stream = z_stream()
        guard
            deflateInit2_(
                &stream, parameters.level, Z_DEFLATED, -windowBits, parameters.memLevel, parameters.strategy,
                ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else {
            throw PatchError.codec(path: input.path, message: "zlib refuses deflate parameters \(parameters)")
        }
        defer { deflateEnd(&stream) }
        // Input goes in 64 kB steps, so a caller comparing the output (a recipe search)
        // sees a block's bytes soon after zlib writes it and can stop early.
        let step = 1 << 16
        let chunk = 1 << 20
        let inBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: step, alignment: 16)
        defer { inBuffer.deallocate() }
        let outBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { outBuffer.deallocate() }
        var done: Int64 = 0
        while true {
            let want = Int(min(Int64(step), length - done))
            let n = try input.readChunk(into: UnsafeMutableRawBufferPointer(rebasing: inBuffer[0..<want]), at: offset + done)
            guard n == want else { throw PatchError.truncated(detail: "\(input.path) ends before a deflate segment does") }
            onInput(UnsafeRawBufferPointer(rebasing: inBuffer[0..<n]))
            done += Int64(n)
            let flush = done == length ? Z_FINISH : Z_NO_FLUSH
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
}

/// zlib's `deflateInit2` parameters for a raw stream with a 32 kB window.
///
/// Held in three bytes (a recipe keeps one per stream, and a file may hold a million).
package struct DeflateParameters: Sendable, Equatable, Hashable, CustomStringConvertible {
    private var levelByte: Int8, memLevelByte: Int8, strategyByte: Int8

    /// Compression level, 0–9.
    package var level: Int32 {
        get { Int32(levelByte) }
        set { levelByte = Int8(clamping: newValue) }
    }
    /// Memory level, 1–9 (zlib's default is 8).
    package var memLevel: Int32 {
        get { Int32(memLevelByte) }
        set { memLevelByte = Int8(clamping: newValue) }
    }
    /// Strategy (`Z_DEFAULT_STRATEGY`, `Z_FILTERED`, …).
    package var strategy: Int32 {
        get { Int32(strategyByte) }
        set { strategyByte = Int8(clamping: newValue) }
    }

    package init(level: Int32, memLevel: Int32 = 8, strategy: Int32 = Z_DEFAULT_STRATEGY) {
        (levelByte, memLevelByte, strategyByte) = (Int8(clamping: level), Int8(clamping: memLevel), Int8(clamping: strategy))
    }

    package var description: String { "level \(level), memLevel \(memLevel), strategy \(strategy)" }

    /// The parameters tried, most common first: zlib's defaults at level 6 and 9 (gzip,
    /// Python's and Java's zlib wrappers, osmium, most zip tools), then what PNG writers
    /// use for filtered image data (`Z_FILTERED`: libpng and GDAL with memLevel 8, Pillow
    /// with memLevel 9, at its levels 6, 9 and 1), then every other level of each.
    package static let candidates: [DeflateParameters] = {
        let filtered = Z_FILTERED
        let first = [
            DeflateParameters(level: 6), DeflateParameters(level: 9),
            DeflateParameters(level: 6, memLevel: 8, strategy: filtered), DeflateParameters(level: 6, memLevel: 9, strategy: filtered),
            DeflateParameters(level: 9, memLevel: 9, strategy: filtered), DeflateParameters(level: 9, memLevel: 8, strategy: filtered),
            DeflateParameters(level: 1, memLevel: 9, strategy: filtered),
        ]
        let rest =
            [1, 5, 4, 3, 2, 7, 8].map { DeflateParameters(level: $0) }
            + [6, 9, 1, 5, 4, 3, 2, 7, 8].map { DeflateParameters(level: $0, memLevel: 9) }
            + [1, 5, 4, 3, 2, 7, 8].flatMap { level in
                [8, 9].map { DeflateParameters(level: level, memLevel: $0, strategy: filtered) }
            }
            + [DeflateParameters(level: 0)]
        var seen = Set<DeflateParameters>()
        return (first + rest).filter { seen.insert($0).inserted }
    }()
}
