@preconcurrency import CZlib
import Foundation
import MapPlatform

extension DeflateStreams {
    /// The most bytes a scan inflates in candidates that turn out not to be streams, as a
    /// multiple of the file's size: the scan's cost is bounded, and (being counted in
    /// bytes, not seconds) it finds the same streams on the publisher and on every client.
    static let scanWasteFactor: Int64 = 2

    /// The deflate streams of a file of a format MapLoader does not parse (PMTiles, an
    /// MBTiles database, any archive of gzip'd tiles), found by looking for them at every
    /// offset, the way precomp does: a gzip member (RFC 1952) or a zlib stream (RFC 1950,
    /// with the header bytes zlib writes) is taken only when it inflates to its end and its
    /// check matches (CRC-32 and length, or Adler-32), so bytes that merely look like a
    /// header are never taken. Deterministic: the same file gives the same streams on the
    /// publisher and on every client (a patch relies on it to expand the old file). At most
    /// ``maxStreams`` are listed.
    package static func scan(in path: String) -> [Stream] {
        guard let mapped = try? MappedFile(path: path) else { return [] }
        return scan(mapped.bytes)
    }

    /// ``scan(in:)`` over bytes in memory.
    package static func scan(_ bytes: UnsafeRawBufferPointer) -> [Stream] {
        let size = bytes.count
        var streams: [Stream] = []
        var wasted: Int64 = 0
        let budget = Int64(size) * scanWasteFactor + (1 << 20)
        var index = 0
        while index + 10 <= size, wasted < budget, streams.count < maxStreams {
            let b0 = bytes[index]
            let b1 = bytes[index + 1]
            var found: (start: Int, deflate: Int, trailer: Int)?
            if b0 == 0x1F, b1 == 0x8B, bytes[index + 2] == 8, bytes[index + 3] & 0xE0 == 0 {
                // A header with its optional name, comment and extra field: 4 KiB covers every
                // real one, and copying no more keeps a scan of thousands of tiles cheap.
                let head = Array(bytes[index..<min(size, index + (4 << 10))])
                if let headerLength = GzipMember.headerLength(head),
                    let check = inflateChecked(bytes, at: index + headerLength, wasted: &wasted, gzip: true),
                    index + headerLength + check.consumed + 8 <= size,
                    readLE32(bytes, index + headerLength + check.consumed) == check.crc,
                    readLE32(bytes, index + headerLength + check.consumed + 4) == UInt32(truncatingIfNeeded: check.output)
                {
                    found = (index + headerLength, check.consumed, 8)
                }
            } else if b0 == 0x78, [0x01, 0x5E, 0x9C, 0xDA].contains(b1),
                let check = inflateChecked(bytes, at: index + 2, wasted: &wasted, gzip: false),
                index + 2 + check.consumed + 4 <= size,
                readBE32(bytes, index + 2 + check.consumed) == check.adler
            {
                found = (index + 2, check.consumed, 4)
            }
            if let found {
                streams.append(Stream(offset: Int64(found.start), length: Int64(found.deflate)))
                index = found.start + found.deflate + found.trailer
            } else {
                index += 1
            }
        }
        return streams
    }

    private static func readLE32(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt32 {
        UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
    }

    private static func readBE32(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }

    /// Inflates the raw deflate stream at `offset` to its end: its compressed length, the
    /// content's length and check (CRC-32 for gzip, Adler-32 for zlib); `nil` when it is
    /// not a whole stream (the bytes it used count as `wasted`).
    private static func inflateChecked(
        _ bytes: UnsafeRawBufferPointer, at offset: Int, wasted: inout Int64,
        gzip: Bool
    ) -> (consumed: Int, output: Int, crc: UInt32, adler: UInt32)? {
        guard offset < bytes.count else { return nil }
        var stream = z_stream()
        guard inflateInit2_(&stream, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }
        var out = [UInt8](repeating: 0, count: 1 << 16)
        var crc = CZlib.crc32(0, nil, 0)
        var adler = CZlib.adler32(0, nil, 0)
        var output = 0
        stream.next_in = UnsafeMutablePointer(mutating: bytes.baseAddress!.assumingMemoryBound(to: Bytef.self) + offset)
        stream.avail_in = uInt(min(bytes.count - offset, Int(UInt32.max)))
        var status: Int32 = Z_OK
        out.withUnsafeMutableBytes { buffer in
            let base = buffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
            repeat {
                stream.next_out = base
                stream.avail_out = uInt(buffer.count)
                status = CZlib.inflate(&stream, Z_NO_FLUSH)
                let produced = buffer.count - Int(stream.avail_out)
                output += produced
                if gzip { crc = CZlib.crc32(crc, base, uInt(produced)) } else { adler = CZlib.adler32(adler, base, uInt(produced)) }
            } while status == Z_OK && (stream.avail_out == 0 || stream.avail_in > 0)
        }
        let consumed = Int(stream.total_in)
        guard status == Z_STREAM_END, output > 0 else {
            wasted += Int64(consumed) + 1
            return nil
        }
        return (consumed, output, UInt32(crc), UInt32(adler))
    }
}
