import CZlib
import Foundation
import MapModel
package import MapPlatform
import Synchronization

/// One large deflate stream made again in pieces, on several threads.
///
/// zlib's output depends on all of its input, but only through the last 32 KiB and the
/// symbols of the block it is filling: a block ends when its symbol buffer is full, and
/// the next starts with an empty one. So a stream can be cut at the end of any of its
/// blocks: zlib started there with the 32 KiB before as its dictionary
/// (`deflateSetDictionary`), given zlib's lookahead of input past the piece's end, writes
/// the same bits up to the cut. (Not always: zlib's lazy match at the cut may differ, and
/// streams of levels 1–3, zlib's fast path, do not cut this way.) The publisher proves each
/// cut on the original stream (``reproduce(_:of:from:at:length:threads:)``), and keeps a
/// piece's cut only where every bit matches; the client deflates the pieces on its threads
/// and joins their bits, which need not fall on byte boundaries (``BitJoiner``). The bytes
/// are the same for any number of threads. Measured on this machine, a 187 MB tar inside
/// one level-9 gzip stream (1,268 blocks): 200 of 200 cuts at block ends reproduce; its
/// first 40 MB at level 6, 100 of 100; at levels 1 and 3, none (so those stay one piece).
///
/// Encoded after a recipe segment of framing 2 (``DeflateRecipe``):
/// `u64 compressed length, u32 cuts`, then each cut's distance from the one before as
/// `u32` (4 bytes per 4 MiB of content).
package struct DeflatePieces: Sendable, Equatable {
    /// The compressed length, then the cuts: one reference, so a recipe segment that may
    /// hold pieces grows by eight bytes only.
    private var storage: [Int64]

    /// Content offsets where the pieces after the first start: increasing, each at least
    /// ``minimumPiece`` after the one before and before the end.
    package var cuts: [Int64] {
        get { Array(storage.dropFirst()) }
        set { storage = [compressedLength] + newValue }
    }
    /// Bytes of the compressed stream.
    package var compressedLength: Int64 {
        get { storage[0] }
        set { storage[0] = newValue }
    }

    package init(cuts: [Int64], compressedLength: Int64) {
        storage = [compressedLength] + cuts
    }

    /// Content the publisher puts in one piece (rounded up to a block's end): 4 MiB deflate
    /// in about 0.4 s at level 9 here, so a piece is a unit of work worth a thread.
    package static let pieceLength: Int64 = 4 << 20
    /// Streams with less content are rebuilt whole (a piece or two would not pay for the
    /// proof).
    package static let minimumStream: Int64 = 8 << 20
    /// The least content of a piece a client accepts (bounds the cuts of a stream by its
    /// length).
    package static let minimumPiece: Int64 = 64 << 10
    /// The most content of a piece a client accepts, and the publisher proves: a piece's
    /// compressed bytes are held until the pieces before it are written, at most
    /// ``DeflateRecipe/batchLimit`` of content at once.
    package static let maximumPiece: Int64 = 16 << 20
    /// zlib's window: the dictionary a piece starts with.
    static let window: Int64 = 32 << 10
    /// zlib's `MIN_LOOKAHEAD` (`MAX_MATCH + MIN_MATCH + 1`): input zlib holds past a position
    /// before it decides what to write there.
    static let lookahead: Int64 = 262

    /// The pieces' content ranges in a stream of `length` content bytes.
    func ranges(length: Int64) -> [Range<Int64>] {
        let starts = [0] + cuts
        let ends = cuts + [length]
        return zip(starts, ends).map { $0..<$1 }
    }

    /// Whether the cuts are valid for a stream of `length` content bytes (a client refuses
    /// others before deflating anything).
    func isValid(length: Int64) -> Bool {
        guard compressedLength > 0, compressedLength <= length.plusSaturating(length >> 8).plusSaturating(1 << 16) else { return false }
        var previous: Int64 = 0
        for cut in cuts + [length] {
            let (gap, overflow) = cut.subtractingReportingOverflow(previous)
            guard !overflow, gap >= Self.minimumPiece, gap <= Self.maximumPiece else { return false }
            previous = cut
        }
        return true
    }

    // MARK: - One piece (both sides)

    /// Deflates the piece `range` of a stream whose `length` content bytes start at `base`
    /// of `expansion`, as zlib did inside the whole stream, handing the compressed bytes to
    /// `output`; returns how many of the bits handed are the piece's. A piece before the
    /// last hands a few bytes more than its bits (zlib finishes a stream to hand them all);
    /// the last piece's bits are all it hands, its last byte padded with zero bits.
    static func deflate(
        _ range: Range<Int64>, ofStreamAt base: Int64, length: Int64, in expansion: SystemFile, parameters: DeflateParameters,
        output: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Int64 {
        var stream = z_stream()
        guard
            deflateInit2_(
                &stream, parameters.level, Z_DEFLATED, -15, parameters.memLevel, parameters.strategy, ZLIB_VERSION,
                Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else {
            throw PatchError.codec(path: expansion.path, message: "zlib refuses deflate parameters \(parameters)")
        }
        defer { deflateEnd(&stream) }
        let step = 1 << 16
        let inBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: step, alignment: 16)
        defer { inBuffer.deallocate() }
        let outBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 18, alignment: 16)
        defer { outBuffer.deallocate() }
        func read(_ count: Int, at offset: Int64) throws -> UnsafeMutableRawBufferPointer {
            let slice = UnsafeMutableRawBufferPointer(rebasing: inBuffer[0..<count])
            guard try expansion.readChunk(into: slice, at: base + offset) == count else {
                throw PatchError.truncated(detail: "\(expansion.path) ends before a deflate stream's content does")
            }
            return slice
        }
        func run(_ flush: Int32) throws {
            repeat {
                stream.next_out = outBuffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.avail_out = uInt(outBuffer.count)
                guard CZlib.deflate(&stream, flush) != Z_STREAM_ERROR else {
                    throw PatchError.codec(path: expansion.path, message: "zlib deflate failed")
                }
                try output(UnsafeRawBufferPointer(rebasing: outBuffer[0..<(outBuffer.count - Int(stream.avail_out))]))
            } while stream.avail_out == 0
        }
        let dictionaryStart = max(0, range.lowerBound - window)
        if dictionaryStart < range.lowerBound {
            let dictionary = try read(Int(range.lowerBound - dictionaryStart), at: dictionaryStart)
            _ = deflateSetDictionary(&stream, dictionary.baseAddress!.assumingMemoryBound(to: Bytef.self), uInt(dictionary.count))
        }
        let last = range.upperBound == length
        let end = last ? length : min(length, range.upperBound + lookahead)
        var position = range.lowerBound
        while position < end {
            let slice = try read(Int(min(Int64(step), end - position)), at: position)
            position += Int64(slice.count)
            stream.next_in = slice.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.avail_in = uInt(slice.count)
            try run(Z_NO_FLUSH)
        }
        var bits = Int64(stream.total_out) * 8
        if !last {
            var pending: UInt32 = 0
            var pendingBits: Int32 = 0
            _ = deflatePending(&stream, &pending, &pendingBits)
            bits += Int64(pending) * 8 + Int64(pendingBits)
        }
        try run(Z_FINISH)
        return last ? Int64(stream.total_out) * 8 : bits
    }

    // MARK: - The client

    /// Writes the stream of `length` content bytes at `base` of `expansion` made again from
    /// its pieces, deflated `threads` at a time and joined in order. Memory: the
    /// compressed bytes of `threads` pieces of at most ``DeflateRecipe/batchLimit`` of
    /// content together. A stream that does not come to ``compressedLength`` throws.
    func rebuild(
        ofStreamAt base: Int64, length: Int64, from expansion: SystemFile, parameters: DeflateParameters, threads: Int,
        output: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        guard isValid(length: length) else { throw PatchError.corrupt(detail: "see-through payload has invalid deflate pieces") }
        let pieces = ranges(length: length)
        var joiner = BitJoiner()
        var index = 0
        while index < pieces.count {
            var end = index + 1
            var content = pieces[index].count
            while end < pieces.count, end - index < threads, content + pieces[end].count <= DeflateRecipe.batchLimit {
                content += pieces[end].count
                end += 1
            }
            let batch = Array(pieces[index..<end])
            let made = Mutex<[Int: Result<([UInt8], Int64), any Error>]>([:])
            DispatchQueue.concurrentPerform(iterations: batch.count) { item in
                let result = Result { () throws -> ([UInt8], Int64) in
                    var bytes: [UInt8] = []
                    let bits = try Self.deflate(batch[item], ofStreamAt: base, length: length, in: expansion, parameters: parameters) {
                        bytes += $0
                    }
                    return (bytes, bits)
                }
                made.withLock { $0[item] = result }
            }
            let results = made.withLock { $0 }
            for item in batch.indices {
                var (bytes, bits) = try results[item]!.get()
                if batch[item].upperBound == length {
                    // The last piece's padding fills its own last byte; the stream's fills
                    // the stream's, up to 7 bits more or fewer. Padding is zero bits.
                    let wanted = compressedLength * 8 - joiner.bits
                    guard abs(wanted - bits) < 8 else {
                        throw PatchError.corrupt(detail: "a deflate stream's pieces do not come to its \(compressedLength) bytes")
                    }
                    (bytes, bits) = (bytes + [0], wanted)
                }
                try bytes.withUnsafeBytes { try joiner.append($0, bits: bits, to: output) }
            }
            index += batch.count
        }
        try joiner.finish(to: output)
        guard joiner.bits == compressedLength * 8 else {
            throw PatchError.corrupt(detail: "a deflate stream's pieces do not come to its \(compressedLength) bytes")
        }
    }

    // MARK: - The publisher

    /// The parameters and pieces that make `stream` of `original` again from its `length`
    /// content bytes at `offset` of `expansion`, every piece proved bit for bit on up to
    /// `threads` threads; nil where no parameters make the first piece, where the stream
    /// has too few blocks to cut, or where a piece joined to its neighbour still differs
    /// (the caller then proves the stream whole).
    package static func reproduce(
        _ stream: DeflateStreams.Stream, of original: SystemFile, from expansion: SystemFile, at offset: Int64, length: Int64,
        threads: Int
    ) -> (DeflateParameters, DeflatePieces)? {
        guard length >= minimumStream, let blocks = try? blockEnds(original, at: stream.offset, length: stream.length) else {
            return nil
        }
        var cuts: [(content: Int64, bit: Int64)] = []
        for block in blocks where block.content - (cuts.last?.content ?? 0) >= pieceLength && length - block.content >= pieceLength / 2 {
            cuts.append(block)
        }
        let proof = Proof(file: original, stream: stream.offset, expansion: expansion, base: offset, length: length)
        func pieces(_ cuts: [(content: Int64, bit: Int64)]) -> [Proof.Piece] {
            let starts = [(content: Int64(0), bit: Int64(0))] + cuts
            return starts.indices.map { index in
                let end = index + 1 < starts.count ? starts[index + 1] : (content: length, bit: stream.length * 8)
                return Proof.Piece(content: starts[index].content..<end.content, bits: starts[index].bit..<end.bit)
            }
        }
        var all = pieces(cuts)
        guard all.count > 1, all.allSatisfy({ $0.content.count <= maximumPiece }) else { return nil }
        guard let parameters = DeflateParameters.candidates.first(where: { proof.holds(all[0], $0) }) else { return nil }
        var failed = proof.failing(Array(all.dropFirst()), parameters, threads: threads).map { $0 + 1 }
        if !failed.isEmpty {  // a piece whose start does not reproduce joins the piece before it
            cuts = cuts.enumerated().filter { !failed.contains($0.offset + 1) }.map(\.element)
            let rejoined = pieces(cuts)
            let touched = Set(failed.map { index in rejoined.lastIndex { $0.content.lowerBound <= all[index].content.lowerBound }! })
            all = rejoined
            guard all.allSatisfy({ $0.content.count <= maximumPiece }) else { return nil }
            failed = proof.failing(touched.sorted().map { all[$0] }, parameters, threads: threads)
            guard failed.isEmpty else { return nil }
        }
        guard !cuts.isEmpty else { return nil }
        return (parameters, DeflatePieces(cuts: cuts.map(\.content), compressedLength: stream.length))
    }

    /// The ends of the blocks of the raw deflate stream of `length` bytes at `offset` of
    /// `file`, before its last: content offset and bit offset of each.
    static func blockEnds(_ file: SystemFile, at offset: Int64, length: Int64) throws -> [(content: Int64, bit: Int64)] {
        var stream = z_stream()
        guard inflateInit2_(&stream, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw PatchError.codec(path: file.path, message: "zlib cannot start inflating")
        }
        defer { inflateEnd(&stream) }
        let inBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 18, alignment: 16)
        defer { inBuffer.deallocate() }
        let outBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 18, alignment: 16)
        defer { outBuffer.deallocate() }
        var ends: [(content: Int64, bit: Int64)] = []
        var position: Int64 = 0
        while true {
            if stream.avail_in == 0, position < length {
                let want = Int(min(Int64(inBuffer.count), length - position))
                guard try file.readChunk(into: UnsafeMutableRawBufferPointer(rebasing: inBuffer[0..<want]), at: offset + position) == want
                else { throw PatchError.corrupt(detail: "\(file.path): a deflate stream ends early") }
                position += Int64(want)
                stream.next_in = inBuffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.avail_in = uInt(want)
            }
            stream.next_out = outBuffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.avail_out = uInt(outBuffer.count)
            let status = CZlib.inflate(&stream, Z_BLOCK)
            if status == Z_STREAM_END { return ends }
            // No progress with all of the stream given: it ends early.
            guard status == Z_OK || (status == Z_BUF_ERROR && position < length) else {
                throw PatchError.corrupt(detail: "\(file.path): not a whole deflate stream")
            }
            if stream.data_type & 128 != 0, stream.data_type & 64 == 0 {
                let bit = Int64(stream.total_in) * 8 - Int64(stream.data_type & 7)
                if ends.last?.bit != bit { ends.append((Int64(stream.total_out), bit)) }
            }
        }
    }
}
