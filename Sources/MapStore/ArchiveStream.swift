import CZlib
import Foundation
import MapPlatform

#if PackagedZstd
    @preconcurrency import libzstd
#else
    @preconcurrency import CZstd
#endif

/// The tar stream inside a full archive: its file read in chunks and decompressed by zstd
/// or zlib (gzip) as its first bytes say, each with one chunk of memory and the codec's
/// window (zstd's at most 128 MiB, the library's default limit; gzip's 32 KiB).
/// Concatenated frames or gzip members read as one stream.
final class ArchiveStream {
    private enum Codec {
        case zstd(OpaquePointer)
        case gzip(UnsafeMutablePointer<z_stream>)
    }

    private let file: SystemFile
    private let codec: Codec
    /// Compressed bytes read and not yet decompressed: `input[position..<filled]`.
    private var input: UnsafeMutableRawBufferPointer
    private var position = 0
    private var filled = 0
    private var endOfFile = false
    /// Whether the compressed stream ended at a frame's or member's end (a stream cut
    /// inside one is corrupt).
    private var atBoundary = true

    /// Opens `path`; `chunk` is how much of the file one read takes (tests feed every size).
    init(path: String, chunk: Int = 1 << 16) throws {
        let file = try SystemFile.openForReading(path)
        self.file = file
        input = .allocate(byteCount: max(1, chunk), alignment: 16)
        var magic = [UInt8](repeating: 0, count: 4)
        let count: Int
        do {
            count = try magic.withUnsafeMutableBytes { try file.readChunk(into: $0, at: 0) }
        } catch {
            input.deallocate()
            throw error
        }
        if count == 4, magic == [0x28, 0xB5, 0x2F, 0xFD], let dctx = ZSTD_createDCtx() {
            codec = .zstd(dctx)
        } else if count >= 2, magic[0] == 0x1F, magic[1] == 0x8B {
            let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
            stream.initialize(to: z_stream())
            guard inflateInit2_(stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
                stream.deallocate()
                input.deallocate()
                throw ArchiveExtractor.Refusal(description: "zlib could not start (out of memory)")
            }
            codec = .gzip(stream)
        } else {
            input.deallocate()
            throw ArchiveExtractor.Refusal(description: "not a readable tar.gz or tar.zst archive (it starts with neither format's magic)")
        }
    }

    deinit {
        switch codec {
        case .zstd(let dctx): ZSTD_freeDCtx(dctx)
        case .gzip(let stream):
            inflateEnd(stream)
            stream.deallocate()
        }
        input.deallocate()
    }

    /// Fills `buffer` with the next decompressed bytes; 0 only at the end of the stream.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            if position == filled, !endOfFile {
                filled = try file.readChunk(into: input)
                position = 0
                endOfFile = filled == 0
            }
            if position == filled, endOfFile {
                guard atBoundary else { throw ArchiveExtractor.Refusal(description: "corrupt archive (it ends inside a compressed frame)") }
                return 0
            }
            let before = position
            let produced = try step(into: buffer)
            if produced > 0 { return produced }
            // A codec that takes no input and gives no output would loop here for ever.
            guard position > before else { throw ArchiveExtractor.Refusal(description: "corrupt archive (the decoder made no progress)") }
        }
    }

    /// Decompresses from the buffered input into `buffer` once; returns the bytes made.
    private func step(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        switch codec {
        case .zstd(let dctx):
            var source = ZSTD_inBuffer(src: input.baseAddress! + position, size: filled - position, pos: 0)
            var target = ZSTD_outBuffer(dst: buffer.baseAddress, size: buffer.count, pos: 0)
            let status = ZSTD_decompressStream(dctx, &target, &source)
            guard ZSTD_isError(status) == 0 else {
                throw ArchiveExtractor.Refusal(description: "corrupt archive (zstd: \(String(cString: ZSTD_getErrorName(status))))")
            }
            position += source.pos
            atBoundary = status == 0
            return target.pos
        case .gzip(let stream):
            stream.pointee.next_in = (input.baseAddress! + position).assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_in = uInt(filled - position)
            stream.pointee.next_out = buffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = uInt(buffer.count)
            let status = inflate(stream, Z_NO_FLUSH)
            let consumed = filled - position - Int(stream.pointee.avail_in)
            let produced = buffer.count - Int(stream.pointee.avail_out)
            position += consumed
            switch status {
            case Z_OK:
                atBoundary = false
            case Z_STREAM_END:
                // The next member, if the file holds one (pigz and `cat a.gz b.gz` write several).
                atBoundary = true
                inflateReset(stream)
            default:
                let message = stream.pointee.msg.map { String(cString: $0) } ?? "error \(status)"
                throw ArchiveExtractor.Refusal(description: "corrupt archive (gzip: \(message))")
            }
            return produced
        }
    }
}
