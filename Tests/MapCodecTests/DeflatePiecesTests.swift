import Foundation
import MapPlatform
import MapPublisher
import MapTestSupport
import Testing

@testable import MapDelta

/// One large gzip stream made again in pieces on several threads (``DeflatePieces``): the
/// publisher proves each cut bit for bit, the client deflates the pieces side by side and
/// joins their bits; the bytes are the same for any number of threads.
@Suite struct DeflatePiecesTests {
    /// Writes one gzip stream of about 12 MB of CSV records made by zlib (Python's gzip
    /// module) at `level`, with `edits` rows changed.
    static func writeGzip(_ url: URL, level: Int, edits: Int = 0) throws {
        try LargeFixtures.writeGzip(url, megabytes: 14, members: 1, edits: edits, level: level)
    }

    /// A 12 MB gzip stream at `level` in `dir`: the stream, the segment the publisher proves
    /// for it, and its compressed bytes.
    static func provedStream(in dir: TemporaryDirectory, level: Int) throws -> (DeflateStreams.Stream, DeflateRecipe.Segment?, Data) {
        try writeGzip(dir.path("records.csv.gz"), level: level)
        let (stream, segment) = try proved(dir.path("records.csv.gz"), expansion: dir.path("expansion"))
        let original = try Data(contentsOf: dir.path("records.csv.gz"))[Int(stream.offset)..<Int(stream.offset + stream.length)]
        return (stream, segment, original)
    }

    /// The file's one deflate stream, its expansion written to `expansion`, and the segment
    /// the publisher proves for it (in pieces where it can).
    static func proved(_ file: URL, expansion: URL, pieces: Bool = true) throws -> (DeflateStreams.Stream, DeflateRecipe.Segment?) {
        let streams = DeflateStreams.find(in: file.path)
        try #require(streams.count == 1)
        let lengths = try DeflateRecipe.expand(file.path, streams: streams, into: expansion.path)
        let original = try SystemFile.openForReading(file.path)
        let expanded = try SystemFile.openForReading(expansion.path)
        var segment = EncodingParts.StreamCodec.deflate.reproduce(
            streams[0], of: original, from: expanded, at: streams[0].offset, length: lengths[0], hint: nil, pieces: pieces, threads: 2)
        segment?.expandedLength = lengths[0]
        return (streams[0], segment)
    }

    /// The stream `segment` makes again from `expansion` on `threads` threads.
    static func rebuilt(_ segment: DeflateRecipe.Segment, stream: DeflateStreams.Stream, expansion: URL, threads: Int) throws -> Data {
        var out = Data()
        try segment.codec.rebuild(segment, of: try SystemFile.openForReading(expansion.path), at: stream.offset, threads: threads) {
            out.append(contentsOf: $0)
        }
        return out
    }

    @Test(arguments: [6, 9])
    func aLargeStreamIsProvedInPiecesAndMadeAgainByteForByteOnAnyThreads(level: Int) async throws {
        let dir = TemporaryDirectory("deflate-pieces-\(level)")
        try await RawThread.run {
            let (stream, made, original) = try Self.provedStream(in: dir, level: level)
            let segment = try #require(made)
            #expect(segment.parameters.level == Int32(level))
            let pieces = try #require(segment.pieces, "a \(segment.expandedLength)-byte stream at level \(level) is not cut")
            #expect(pieces.cuts.count >= 2, "\(pieces.cuts)")
            #expect(pieces.compressedLength == stream.length)
            for threads in [1, 2, 4] {
                let made = try Self.rebuilt(segment, stream: stream, expansion: dir.path("expansion"), threads: threads)
                // Compared as one Bool: a failure's diff of two 5 MB values would take hours.
                let same = made == original
                #expect(same, "\(threads) threads: \(made.count) B against \(original.count) B")
            }
        }
    }

    /// A cut moved off the block end it was proved at no longer makes the stream: the
    /// rebuild fails or differs (the applier's SHA-256 then refuses the file).
    @Test func aCutOffItsBlockEndDoesNotMakeTheStream() async throws {
        let dir = TemporaryDirectory("deflate-pieces-moved")
        try await RawThread.run {
            let (stream, made, original) = try Self.provedStream(in: dir, level: 6)
            var segment = try #require(made)
            segment.pieces!.cuts[0] += 4096
            let moved = try? Self.rebuilt(segment, stream: stream, expansion: dir.path("expansion"), threads: 2)
            let differs = moved != original
            #expect(differs)
        }
    }

    /// Level 1 streams (zlib's fast path) do not cut at their block ends, and are proved
    /// whole as before.
    @Test func aStreamWhoseCutsDoNotHoldIsProvedWhole() async throws {
        let dir = TemporaryDirectory("deflate-pieces-level1")
        try await RawThread.run {
            let (stream, made, original) = try Self.provedStream(in: dir, level: 1)
            let segment = try #require(made)
            #expect(segment.pieces == nil)
            #expect(segment.parameters.level == 1)
            let same = try Self.rebuilt(segment, stream: stream, expansion: dir.path("expansion"), threads: 2) == original
            #expect(same)
        }
    }

    /// Through a patch: the see-through payload's recipe cuts the stream, the patch lists the
    /// codec a client needs, and it applies byte for byte on one thread and on several.
    @Test func aPatchOfALargeGzipStreamAppliesInPiecesAndNamesItsCodec() async throws {
        let dir = TemporaryDirectory("deflate-pieces-patch")
        let stats = try await RawThread.value {
            try Self.writeGzip(dir.path("old/records.csv.gz"), level: 6)
            try Self.writeGzip(dir.path("new/records.csv.gz"), level: 6, edits: 40)
            return try PatchBuilder.build(
                from: dir.path("old"), to: dir.path("new"), output: dir.path("p"), options: .comparingEvery(level: 3))
        }
        let file = try #require(stats.file("records.csv.gz"))
        #expect(file.encoding?.parts.view == .deflate, "\(String(describing: file.encoding))")
        #expect(file.codecs == [PatchCodecs.deflatePieces])
        #expect(PatchCodecs.available.contains(PatchCodecs.deflatePieces))
        let expected = try Data(contentsOf: dir.path("new/records.csv.gz"))
        for threads in [1, 3] {
            try await RawThread.run {
                _ = try PatchApplier.apply(
                    patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out-\(threads)"), resumeIn: nil, threads: threads)
            }
            let same = try Data(contentsOf: dir.path("out-\(threads)/records.csv.gz")) == expected
            #expect(same, "\(threads) threads")
        }
    }

    /// Hostile recipes: cuts out of order, closer than a least piece, more than the content
    /// allows, or a compressed length of nothing are refused with a clear error, never trapped on.
    struct Hostile: Sendable, CustomStringConvertible {
        var description: String
        var cuts: [Int64]
        var compressedLength: Int64
        var expanded: Int64 = 4 << 20
    }
    static let hostile: [Hostile] = [
        Hostile(description: "out of order", cuts: [1 << 20, 1 << 19], compressedLength: 1000),
        Hostile(description: "closer than a least piece", cuts: [1 << 20, (1 << 20) + 10], compressedLength: 1000),
        Hostile(description: "negative", cuts: [-5], compressedLength: 1000),
        Hostile(description: "no compressed bytes", cuts: [1 << 20], compressedLength: 0),
        Hostile(description: "more compressed bytes than the content allows", cuts: [1 << 20], compressedLength: .max),
        Hostile(description: "the last piece shorter than a least piece", cuts: [(4 << 20) - 100], compressedLength: 1000),
        Hostile(description: "a piece larger than a client holds", cuts: [1 << 20], compressedLength: 1000, expanded: 40 << 20),
    ]

    @Test(arguments: hostile)
    func aRecipeWithInvalidPiecesIsRefused(_ hostile: Hostile) throws {
        let dir = TemporaryDirectory("deflate-pieces-hostile")
        let segment = DeflateRecipe.Segment(
            rawBefore: 10, expandedLength: hostile.expanded, parameters: DeflateParameters(level: 6),
            pieces: DeflatePieces(cuts: hostile.cuts, compressedLength: hostile.compressedLength))
        let encoded = DeflateRecipe(segments: [segment], tail: 8).encoded
        try Data(encoded).write(to: dir.path("recipe"))
        let file = try SystemFile.openForReading(dir.path("recipe").path)
        #expect(throws: PatchError.self) { try DeflateRecipe.decode(from: file, at: 0, within: Int64(encoded.count)) }
        // A count of cuts past what the payload holds is refused before anything is read for it.
        var huge = encoded
        huge.replaceSubrange(48..<52, with: [0xFF, 0xFF, 0xFF, 0x0F])
        try Data(huge).write(to: dir.path("huge"))
        let hugeFile = try SystemFile.openForReading(dir.path("huge").path)
        #expect(throws: PatchError.self) { try DeflateRecipe.decode(from: hugeFile, at: 0, within: Int64(huge.count)) }
    }

    /// A valid recipe with pieces reads back as it was written.
    @Test func aRecipeWithPiecesReadsBackAsWritten() throws {
        let dir = TemporaryDirectory("deflate-pieces-recipe")
        let pieces = DeflatePieces(cuts: [4 << 20, 8 << 20], compressedLength: 3_000_000)
        let recipe = DeflateRecipe(
            segments: [DeflateRecipe.Segment(rawBefore: 10, expandedLength: 12 << 20, parameters: DeflateParameters(level: 9), pieces: pieces)],
            tail: 8)
        try Data(recipe.encoded).write(to: dir.path("recipe"))
        let (read, length) = try DeflateRecipe.decode(
            from: try SystemFile.openForReading(dir.path("recipe").path), at: 0, within: Int64(recipe.encoded.count))
        #expect(read == recipe)
        #expect(length == Int64(recipe.encoded.count))
    }
}
