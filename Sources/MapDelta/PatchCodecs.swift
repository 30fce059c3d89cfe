import MapPlatform

/// The optional codecs a patch may need beyond those every build decodes, and which of them
/// this build decodes.
///
/// A site lists, for each patch, the optional codecs its payloads use
/// (`PatchEdge.codecs` in the signed manifest); a client plans only patches whose codecs it
/// decodes, and takes the full archive or another chain for the rest, before anything is
/// downloaded. Every build decodes zstd and zlib.
package enum PatchCodecs {
    /// LZMA2 (liblzma): smaller payloads for small files.
    package static let lzma = "lzma"

    /// zstd frames inside a file rebuilt byte for byte (``EncodingParts/View/scannedZstd``),
    /// which only the zstd version that checked them does: `zstd-frames-1.5.4` on a
    /// publisher that links zstd 1.5.4, decoded by clients that link the same.
    package static let zstdFrames = "zstd-frames-" + ZstdFrames.versionName(ZstdFrames.version)

    /// Deflate streams made again in pieces on several threads (``DeflatePieces``): a
    /// recipe segment of framing 2, which clients that predate it refuse.
    package static let deflatePieces = "deflate-pieces"

    /// The optional codecs this build decodes (LZMA2 with the trait LZMA, the default; the
    /// zstd frames of the zstd version it links; deflate pieces).
    package static let available: Set<String> = {
        #if LZMA
            [lzma, zstdFrames, deflatePieces]
        #else
            [zstdFrames, deflatePieces]
        #endif
    }()

    /// The optional codecs the payloads of `encodings` need, sorted; `nil` when none.
    package static func needed(by encodings: some Sequence<PatchEncoding>) -> [String]? {
        needed(encodings.compactMap(\.optionalCodec))
    }

    /// The optional codecs a payload of `encoding` in the file at `path` needs: its
    /// encoding's, and ``deflatePieces`` where its recipe cuts a stream into pieces (read
    /// from the payload, so what is listed is what was written).
    package static func needed(byPayload path: String, encoding: PatchEncoding) throws -> [String] {
        var codecs = encoding.optionalCodec.map { [$0] } ?? []
        if encoding.parts.view == .deflate {
            let file = try SystemFile.openForReading(path)
            let (recipe, _) = try DeflateRecipe.decode(from: file, at: 0, within: try file.size())
            if recipe.segments.contains(where: { $0.pieces != nil }) { codecs.append(deflatePieces) }
        }
        return codecs
    }

    /// The optional codecs of `codecs` (each payload's, ``needed(byPayload:encoding:)``),
    /// once each, sorted; `nil` when none.
    package static func needed(_ codecs: some Sequence<String>) -> [String]? {
        let codecs = Set(codecs)
        return codecs.isEmpty ? nil : codecs.sorted()
    }
}
