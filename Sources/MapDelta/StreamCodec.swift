package import MapPlatform

extension EncodingParts {
    /// The codec of the streams a see-through view expands: how a scan finds them, how one
    /// is expanded, how one is made again from its content, and how a recipe's columns hold
    /// its parameters. Deflate streams are zlib's (``DeflateStreams``), zstd frames
    /// libzstd's (``ZstdFrames``); a new stream codec is a case here and its own file.
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

        /// Expands `stream` of `file`, handing its content to `output` in chunks; a stream
        /// that does not end where the list says throws.
        func expand(_ file: SystemFile, _ stream: DeflateStreams.Stream, output: (UnsafeRawBufferPointer) throws -> Void) throws {
            switch self {
            case .zstd:
                try ZstdFrames.expand(file, stream, output: output)
            case .deflate where stream.png != nil:
                try DeflateStreams.inflatePNG(file, stream, output: output)
            case .deflate:
                var consumed: Int64 = 0
                try DeflateStreams.inflate(file, at: stream.offset, limit: stream.offset + stream.length, consumed: &consumed, output: output)
                guard consumed == stream.length else { throw PatchError.corrupt(detail: "\(file.path): a deflate stream changed length") }
            }
        }

        /// Makes `segment` again from its content at `offset` of `expansion`, handing the
        /// compressed bytes to `output`; a deflate stream in pieces on up to `threads` threads.
        func rebuild(
            _ segment: DeflateRecipe.Segment, of expansion: SystemFile, at offset: Int64, threads: Int = 1,
            output: (UnsafeRawBufferPointer) throws -> Void
        ) throws {
            switch (self, segment.zstd, segment.png) {
            case (.zstd, let zstd?, _):
                try ZstdFrames.compress(expansion, offset: offset, length: segment.expandedLength, parameters: zstd, output: output)
            case (.zstd, nil, _):
                throw PatchError.corrupt(detail: "a zstd frame of a recipe without its parameters")
            case (.deflate, _, let png?):
                let framed = try DeflateStreams.framePNG(
                    expansion, offset: offset, length: segment.expandedLength, run: png, parameters: segment.parameters)
                try framed.withUnsafeBytes { try output($0) }
            case (.deflate, _, nil) where segment.pieces != nil:
                try segment.pieces!.rebuild(
                    ofStreamAt: offset, length: segment.expandedLength, from: expansion, parameters: segment.parameters, threads: threads,
                    output: output)
            case (.deflate, _, nil):
                try DeflateStreams.deflate(
                    expansion, offset: offset, length: segment.expandedLength, parameters: segment.parameters, output: output)
            }
        }

        /// The segment that makes `stream` of `original` again from its `length` bytes of
        /// content at `offset` of `expansion` (its parameters set, its place and length not),
        /// compared as it is produced; nil where this codec's library does not. `hint`, the
        /// segment that made another stream of the file, is tried first: a file's streams
        /// mostly share one setting. With `pieces`, a large raw deflate stream is proved in
        /// pieces on up to `threads` threads (``DeflatePieces``), which a client makes again
        /// on its threads; one that does not cut is proved whole.
        package func reproduce(
            _ stream: DeflateStreams.Stream, of original: SystemFile, from expansion: SystemFile, at offset: Int64, length: Int64,
            hint: DeflateRecipe.Segment?, pieces: Bool = false, threads: Int = 1
        ) -> DeflateRecipe.Segment? {
            var segment = DeflateRecipe.Segment(
                rawBefore: 0, expandedLength: 0, parameters: DeflateParameters(level: 0, memLevel: 1, strategy: 0), png: stream.png)
            switch self {
            case .zstd:
                guard
                    let zstd = ZstdFrames.parameters(
                        reproducing: original, at: stream.offset, length: stream.length, from: expansion, at: offset, length: length,
                        first: hint?.zstd?.level)
                else { return nil }
                segment.zstd = zstd
            case .deflate where pieces && stream.png == nil && length >= DeflatePieces.minimumStream:
                if let (parameters, cut) = DeflatePieces.reproduce(
                    stream, of: original, from: expansion, at: offset, length: length, threads: threads)
                {
                    (segment.parameters, segment.pieces) = (parameters, cut)
                    return segment
                }
                return Self.deflate.reproduce(stream, of: original, from: expansion, at: offset, length: length, hint: hint)
            case .deflate:
                guard
                    let parameters = DeflateRecipe.parameters(
                        reproducing: original, at: stream.offset, length: stream.length, from: expansion, at: offset, length: length,
                        png: stream.png)
                else { return nil }
                segment.parameters = parameters
            }
            return segment
        }

        /// What a recipe's columns start with: nothing for deflate (zlib's output does not
        /// change between versions); for zstd, `u32` the libzstd version that makes its
        /// frames again (``ZstdFrames/version``).
        var columnsHead: [UInt8] {
            self == .zstd ? withUnsafeBytes(of: ZstdFrames.version.littleEndian, Array.init) : []
        }

        /// Checks the ``columnsHead`` at the start of `bytes`; returns its length. A client of
        /// another zstd version than the recipe's refuses it, saying what to do.
        func checkColumnsHead(_ bytes: [UInt8]) throws -> Int {
            guard self == .zstd else { return 0 }
            guard bytes.count >= 4 else { throw PatchError.corrupt(detail: "see-through payload has an invalid recipe") }
            let version = bytes[0..<4].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            guard version == ZstdFrames.version else {
                throw PatchError.codec(
                    path: "",
                    message: "its zstd frames are rebuilt by zstd \(ZstdFrames.versionName(version)), and this build links "
                        + "zstd \(ZstdFrames.versionName(ZstdFrames.version)): download the full archive instead")
            }
            return 4
        }

        /// A segment's parameter set as the columns hold it (3 bytes).
        func parameterSet(of segment: DeflateRecipe.Segment) -> [UInt8] {
            switch self {
            case .zstd: segment.zstd?.encoded ?? [0, 0, 0]
            case .deflate: [UInt8(segment.parameters.level), UInt8(segment.parameters.memLevel), UInt8(segment.parameters.strategy)]
            }
        }

        /// Sets the parameters `set` spells on `segment`; false for a set out of range.
        func apply(set: ArraySlice<UInt8>, to segment: inout DeflateRecipe.Segment) -> Bool {
            let bytes = Array(set)
            guard bytes.count == 3 else { return false }
            switch self {
            case .zstd:
                guard let zstd = ZstdFrames.Parameters(encoded: bytes) else { return false }
                segment.zstd = zstd
            case .deflate:
                let deflate = DeflateParameters(level: Int32(bytes[0]), memLevel: Int32(bytes[1]), strategy: Int32(bytes[2]))
                guard (0...9).contains(deflate.level), (1...9).contains(deflate.memLevel), (0...4).contains(deflate.strategy) else {
                    return false
                }
                segment.parameters = deflate
            }
            return true
        }

        package var description: String {
            switch self {
            case .deflate: "deflate"
            case .zstd: "zstd"
            }
        }
    }
}
