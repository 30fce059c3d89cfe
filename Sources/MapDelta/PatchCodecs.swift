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

    /// The optional codecs this build decodes (LZMA2 with the trait LZMA, the default; the
    /// zstd frames of the zstd version it links).
    package static let available: Set<String> = {
        #if LZMA
            [lzma, zstdFrames]
        #else
            [zstdFrames]
        #endif
    }()

    /// The optional codecs the payloads of `encodings` need, sorted; `nil` when none.
    package static func needed(by encodings: some Sequence<PatchEncoding>) -> [String]? {
        let codecs = Set(encodings.compactMap(\.optionalCodec))
        return codecs.isEmpty ? nil : codecs.sorted()
    }
}
