@preconcurrency import CZlib
import Foundation
import MapModel
import MapPlatform

/// PNG image data (raster tiles): one zlib stream cut into consecutive `IDAT` chunks, each
/// framed by a length, its type and a CRC-32. A see-through delta inflates the stream (the
/// pixels change little between versions, the compressed bytes change entirely) and the
/// client rebuilds the run: deflate with the recorded parameters, the zlib header and
/// Adler-32, cut into chunks of the recorded size, each with its CRC.
package struct PNGRun: Sendable, Equatable {
    // Six bytes (a recipe segment holds an optional run): a chunk's size is a u32 in PNG.
    private var chunkBytes: UInt32
    private var headerBytes: UInt16

    /// Data bytes of every chunk but the last (which holds the rest, at most this many).
    package var chunkSize: Int64 { Int64(chunkBytes) }
    /// The zlib stream's two header bytes (CMF, FLG).
    package var header: [UInt8] { [UInt8(headerBytes >> 8), UInt8(headerBytes & 0xFF)] }

    /// The deflate window the header declares (CINFO + 8).
    package var windowBits: Int32 { Int32(header[0] >> 4) + 8 }

    /// The largest run handled (the compressed stream is held in memory); larger images
    /// stay byte-level.
    package static let maxRunLength: Int64 = 64 << 20

    /// A run with chunks of `chunkSize` data bytes and zlib header `header`; a size past a
    /// u32 or a header of other than two bytes makes a run that ``isValidHeader(_:)`` and
    /// the size checks refuse (size 0, header 0).
    package init(chunkSize: Int64, header: [UInt8]) {
        chunkBytes = UInt32(exactly: chunkSize) ?? 0
        headerBytes = header.count == 2 ? UInt16(header[0]) << 8 | UInt16(header[1]) : 0
    }

    /// Whether `header` is a zlib header PNG allows: deflate, a window of at most 32 kB,
    /// no preset dictionary, a valid check.
    static func isValidHeader(_ header: [UInt8]) -> Bool {
        header.count == 2 && header[0] & 0x0F == 8 && header[0] >> 4 <= 7 && header[1] & 0x20 == 0
            && (Int(header[0]) << 8 | Int(header[1])) % 31 == 0
    }
}

extension DeflateStreams {
    /// PNG: the signature, then chunks; the one run of consecutive `IDAT` chunks whose
    /// sizes are regular (all equal but the last, as encoders write them) becomes a stream.
    static func pngStreams(_ file: SystemFile, size: Int64) -> [Stream]? {
        var offset: Int64 = 8
        var run: (start: Int64, end: Int64, chunkSize: Int64, lastSize: Int64, count: Int)?
        while offset + 12 <= size, let head = try? read(file, at: offset, count: 8) {
            let length = Int64(head[0]) << 24 | Int64(head[1]) << 16 | Int64(head[2]) << 8 | Int64(head[3])
            let end = offset + 12 + length
            guard end <= size else { return nil }
            if Array(head[4..<8]) == Array("IDAT".utf8) {
                if var current = run {
                    guard current.end == offset, current.lastSize == current.chunkSize, length <= current.chunkSize,
                        length > 0
                    else { return [] }  // irregular chunks: byte-level
                    current.end = end
                    current.lastSize = length
                    current.count += 1
                    run = current
                } else {
                    guard length > 0 else { return [] }
                    run = (offset, end, length, length, 1)
                }
            } else if run != nil, head[4...7].elementsEqual("IEND".utf8) {
                break
            }
            offset = end
        }
        guard let run, run.end - run.start <= PNGRun.maxRunLength,
            let first = try? read(file, at: run.start + 8, count: 2), PNGRun.isValidHeader(first)
        else { return [] }
        return [
            Stream(
                offset: run.start, length: run.end - run.start,
                png: PNGRun(chunkSize: run.chunkSize, header: first))
        ]
    }

    /// The zlib stream a run of IDAT chunks holds: their data, concatenated.
    static func pngData(_ file: SystemFile, _ stream: Stream) throws -> [UInt8] {
        var data: [UInt8] = []
        var offset = stream.offset
        while offset < stream.offset + stream.length {
            let head = try read(file, at: offset, count: 8)
            let length = Int(head[0]) << 24 | Int(head[1]) << 16 | Int(head[2]) << 8 | Int(head[3])
            data += try read(file, at: offset + 8, count: length)
            offset += 12 + Int64(length)
        }
        return data
    }

    /// Inflates the image data of a PNG run, handing the pixels (filtered scanlines) to `output`.
    static func inflatePNG(_ file: SystemFile, _ stream: Stream, output: (UnsafeRawBufferPointer) throws -> Void) throws {
        let data = try pngData(file, stream)
        guard data.count > 6 else { throw PatchError.corrupt(detail: "\(file.path): an empty PNG image stream") }
        var z = z_stream()
        guard inflateInit2_(&z, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw PatchError.codec(path: file.path, message: "zlib cannot start inflating")
        }
        defer { inflateEnd(&z) }
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { out.deallocate() }
        try data.withUnsafeBytes { raw in
            z.next_in = UnsafeMutablePointer(mutating: raw.baseAddress!.assumingMemoryBound(to: Bytef.self) + 2)
            z.avail_in = uInt(data.count - 2)
            let status = try drain(&z, into: out, what: "\(file.path): not a valid PNG image stream", output: output)
            guard status == Z_STREAM_END, z.avail_in == 4 else { throw PatchError.corrupt(detail: "\(file.path): bytes after the PNG image stream") }
        }
    }

    /// The run of IDAT chunks that `length` bytes of `content` at `offset` make with
    /// `parameters`: deflated with the run's window, zlib header and Adler-32 added, cut
    /// into chunks of the run's size, each framed with its length, type and CRC-32.
    static func framePNG(
        _ content: SystemFile, offset: Int64, length: Int64, run: PNGRun,
        parameters: DeflateParameters
    ) throws -> [UInt8] {
        var zlib = run.header
        var adler = CZlib.adler32(0, nil, 0)
        try deflate(
            content, offset: offset, length: length, parameters: parameters, windowBits: run.windowBits,
            onInput: { adler = CZlib.adler32(adler, $0.baseAddress!.assumingMemoryBound(to: Bytef.self), uInt($0.count)) },
            output: {
                zlib += $0
                guard Int64(zlib.count) <= PNGRun.maxRunLength else {
                    throw PatchError.corrupt(detail: "a PNG image stream grows past \(PNGRun.maxRunLength) bytes")
                }
            })
        zlib += [UInt8(adler >> 24 & 0xFF), UInt8(adler >> 16 & 0xFF), UInt8(adler >> 8 & 0xFF), UInt8(adler & 0xFF)]
        var framed: [UInt8] = []
        framed.reserveCapacity(zlib.count + zlib.count / Int(run.chunkSize) * 12 + 12)
        var start = 0
        while start < zlib.count {
            let end = min(start + Int(run.chunkSize), zlib.count)
            let length = UInt32(end - start)
            framed += [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
            let typed = Array("IDAT".utf8) + zlib[start..<end]
            framed += typed
            let crc = typed.withUnsafeBytes { CZlib.crc32(0, $0.baseAddress!.assumingMemoryBound(to: Bytef.self), uInt($0.count)) }
            framed += [UInt8(crc >> 24 & 0xFF), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
            start = end
        }
        return framed
    }
}
