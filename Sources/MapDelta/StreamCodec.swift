extension EncodingParts {
    /// The codec of the streams a see-through view expands: how a scan finds them, how one
    /// is expanded and how one is rebuilt from its content. Deflate streams are zlib's
    /// (``DeflateStreams``), zstd frames libzstd's (``ZstdFrames``); a new stream codec is a
    /// case here and its own file.
    package enum StreamCodec: Sendable, Hashable, CustomStringConvertible {
        /// Raw deflate streams (gzip members, zlib streams, zip entries, PNG image data).
        case deflate
        /// Whole zstd frames.
        case zstd

        /// The streams of this codec a scan of the file at `path` finds, in file order.
        package func scan(in path: String) -> [DeflateStreams.Stream] {
            switch self {
            case .deflate: DeflateStreams.scan(in: path)
            case .zstd: ZstdFrames.scan(in: path)
            }
        }

        package var description: String {
            switch self {
            case .deflate: "deflate"
            case .zstd: "zstd"
            }
        }
    }
}
