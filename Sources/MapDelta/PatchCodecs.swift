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

    /// The optional codecs this build decodes (LZMA2 with the trait LZMA, the default).
    package static let available: Set<String> = {
        #if LZMA
            [lzma]
        #else
            []
        #endif
    }()

    /// The optional codecs the payloads of `encodings` need, sorted; `nil` when none.
    package static func needed(by encodings: some Sequence<PatchEncoding>) -> [String]? {
        let codecs = Set(encodings.compactMap(\.optionalCodec))
        return codecs.isEmpty ? nil : codecs.sorted()
    }
}
