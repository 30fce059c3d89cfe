/// What a payload's encoding is made of: how the file's bytes are seen (``View``), how the
/// delta of what is seen is laid out (``Layout``), which codec makes it (``Codec``) and
/// what it reads besides the payload (``Reference``). Each wire value of ``PatchEncoding``
/// is one row of ``PatchEncoding/parts`` (the one table), and the applier dispatches by
/// part: a view is applied by its own file (the deflate views by `PatchRun+SeeThrough`),
/// a segmented layout by `PatchRun+Segmented`, a cross-file reference by `PatchRun+Cross`,
/// a codec by `PatchRun.decode`. Adding a part is a case here, its decoder beside the
/// others of its kind, and a row in the table for each wire value that uses it.
package struct EncodingParts: Sendable, Hashable, CustomStringConvertible {
    /// How the file's bytes are seen before they are diffed: as they are, or with the
    /// compressed streams inside them expanded in place (a see-through view), which streams
    /// found how (``StreamFinder``) and compressed with what (``StreamCodec``).
    package enum View: Sendable, Hashable, CustomStringConvertible {
        /// The bytes as they are.
        case bytes
        /// The streams `finder` finds, each expanded in place; `codec` rebuilds their exact
        /// compressed bytes from a ``DeflateRecipe``.
        case streams(StreamFinder, StreamCodec)

        /// Deflate streams where the file's container says they are (gzip, zip, OSM PBF,
        /// PNG: ``DeflateStreams/find(in:)``), inflated in place; zlib rebuilds the exact
        /// compressed bytes from a ``DeflateRecipe``.
        package static let deflate = View.streams(.container, .deflate)
        /// Deflate streams found by a scan of the old file (gzip members and zlib streams at
        /// any offset: ``DeflateStreams/scan(in:)``), for containers MapLoader does not
        /// parse; the recipe is a column frame against the old file's layout.
        package static let scannedDeflate = View.streams(.scan, .deflate)
        /// As ``scannedDeflate``, after both files' SQLite overflow chains are gathered
        /// (``GatherMap``); the payload starts with the new file's map.
        package static let gatheredDeflate = View.streams(.gatheredScan, .deflate)
        /// zstd frames found by a scan of the old file (``ZstdFrames/scan(in:)``): the tiles
        /// of a PMTiles archive whose header says zstd; libzstd of the publisher's version
        /// rebuilds them (``PatchCodecs/zstdFrames``).
        package static let scannedZstd = View.streams(.scan, .zstd)

        /// Whether the file's streams are expanded before the delta (a see-through view).
        package var seesThrough: Bool { self != .bytes }
        /// Whether the old file's streams are found by a scan rather than by its container.
        package var scans: Bool {
            guard case .streams(let finder, _) = self else { return false }
            return finder != .container
        }
        /// Whether both files are gathered first.
        package var gathers: Bool {
            guard case .streams(let finder, _) = self else { return false }
            return finder == .gatheredScan
        }
        /// The codec of the streams expanded; nil for the bytes as they are.
        package var streamCodec: StreamCodec? {
            guard case .streams(_, let codec) = self else { return nil }
            return codec
        }

        package var description: String {
            switch self {
            case .bytes: "bytes"
            case .streams(.container, let codec): "\(codec)"
            case .streams(.scan, let codec): "scanned \(codec)"
            case .streams(.gatheredScan, let codec): "gathered \(codec)"
            }
        }
    }

    /// How a see-through view finds the streams it expands.
    package enum StreamFinder: Sendable, Hashable {
        /// Where the file's container says they are.
        case container
        /// By a scan of the file at every offset (both sides find the same streams).
        case scan
        /// By a scan after the file's SQLite overflow chains are gathered.
        case gatheredScan
    }

    /// How the delta of what the view sees is laid out.
    package enum Layout: Sendable, Hashable {
        /// One frame or stream for the whole file.
        case whole
        /// A ``SegmentedDelta``: segments of the new file, each against a window of the old
        /// one, each with its SHA-256 (bounded memory, resumable).
        case segmented
    }

    /// Which codec makes the delta.
    package enum Codec: Sendable, Hashable {
        /// The bytes themselves.
        case stored
        /// zstd frames (``ZstdDelta``), with the reference as raw-content prefix.
        case zstd
        /// A raw LZMA2 stream (``LzmaDelta``), with the reference preloaded in its dictionary.
        case lzma
        /// A bsdiff-class delta (``SuffixDelta``) laid out in `form`.
        case suffix(SuffixDelta.Form)

        /// The suffix delta's form, if this is one.
        package var suffixForm: SuffixDelta.Form? {
            if case .suffix(let form) = self { return form }
            return nil
        }
    }

    /// What the delta reads besides its payload.
    package enum Reference: Sendable, Hashable {
        /// Nothing: the file on its own.
        case none
        /// The file's own old version (its old view, for a see-through view); nothing for a
        /// see-through expansion of a new file.
        case old
        /// Other files of the group, then its own old version (``CrossReferences``), up to
        /// ``CrossReferences/maxPrefixBytes``.
        case cross
        /// As ``cross``, for one frame of a file above the segment threshold, up to
        /// ``CrossReferences/maxWholePrefixBytes``.
        case wideCross

        /// Whether other files of the group are read.
        package var isCross: Bool { self == .cross || self == .wideCross }
    }

    package var view: View
    package var layout: Layout
    package var codec: Codec
    package var reference: Reference

    /// The parts, each given.
    package init(_ view: View, _ layout: Layout, _ codec: Codec, _ reference: Reference) {
        self.view = view
        self.layout = layout
        self.codec = codec
        self.reference = reference
    }

    /// Whether a new file, which has no old version, may be sent this way: with no
    /// reference, or as a see-through expansion compressed on its own where the container
    /// says where its streams are (a scan and a gather read the old file's layout; a suffix
    /// delta needs an old expansion).
    package var sendsNewFiles: Bool { reference == .none || (view == .deflate && codec == .zstd) }

    /// The parts as a reader of a test failure sees them.
    package var description: String { "\(view) \(layout) \(codec) against \(reference)" }
}

extension PatchEncoding {
    /// The one table: the parts of each wire value. Every derived fact below (and the
    /// applier's dispatch) reads these, never the case itself.
    package var parts: EncodingParts {
        switch self {
        case .stored: EncodingParts(.bytes, .whole, .stored, .none)
        case .zstd: EncodingParts(.bytes, .whole, .zstd, .none)
        case .delta: EncodingParts(.bytes, .whole, .zstd, .old)
        case .deflateDelta: EncodingParts(.deflate, .whole, .zstd, .old)
        case .segmentedDelta: EncodingParts(.bytes, .segmented, .zstd, .old)
        case .crossDelta: EncodingParts(.bytes, .whole, .zstd, .cross)
        case .suffixDelta: EncodingParts(.bytes, .whole, .suffix(.plain), .old)
        case .scannedDeflateDelta: EncodingParts(.scannedDeflate, .whole, .zstd, .old)
        case .gatheredDeflateDelta: EncodingParts(.gatheredDeflate, .whole, .zstd, .old)
        case .segmentedDeflateDelta: EncodingParts(.deflate, .segmented, .zstd, .old)
        case .segmentedScannedDeflateDelta: EncodingParts(.scannedDeflate, .segmented, .zstd, .old)
        case .segmentedGatheredDeflateDelta: EncodingParts(.gatheredDeflate, .segmented, .zstd, .old)
        case .segmentedCrossDelta: EncodingParts(.bytes, .segmented, .zstd, .cross)
        case .filteredSuffixDelta: EncodingParts(.bytes, .whole, .suffix(.filtered), .old)
        case .suffixDeflateDelta: EncodingParts(.deflate, .whole, .suffix(.expansion), .old)
        case .suffixScannedDeflateDelta: EncodingParts(.scannedDeflate, .whole, .suffix(.expansion), .old)
        case .suffixGatheredDeflateDelta: EncodingParts(.gatheredDeflate, .whole, .suffix(.expansion), .old)
        case .lzma: EncodingParts(.bytes, .whole, .lzma, .none)
        case .lzmaDelta: EncodingParts(.bytes, .whole, .lzma, .old)
        case .lzmaCrossDelta: EncodingParts(.bytes, .whole, .lzma, .cross)
        case .wholeCrossDelta: EncodingParts(.bytes, .whole, .zstd, .wideCross)
        case .sparseSuffixDelta: EncodingParts(.bytes, .whole, .suffix(.sparse), .old)
        case .scannedZstdDelta: EncodingParts(.scannedZstd, .whole, .zstd, .old)
        case .segmentedScannedZstdDelta: EncodingParts(.scannedZstd, .segmented, .zstd, .old)
        case .suffixScannedZstdDelta: EncodingParts(.scannedZstd, .whole, .suffix(.expansion), .old)
        }
    }

    /// The wire value made of `parts`, or `nil` where no wire value is (a client could not
    /// decode it).
    package init?(parts: EncodingParts) {
        guard let encoding = Self.allCases.first(where: { $0.parts == parts }) else { return nil }
        self = encoding
    }

    /// The see-through encoding of `view` (a see-through view), its expansion laid out as
    /// `layout` in `codec` against the old expansion: a segmented layout is zstd's, and a
    /// suffix delta of an expansion has the expansion's form.
    package init(seeThrough view: EncodingParts.View, layout: EncodingParts.Layout, suffix: Bool) {
        let codec: EncodingParts.Codec = suffix ? .suffix(.expansion) : .zstd
        // Every see-through view has a row for each (whole, zstd), (segmented, zstd), (whole, suffix).
        self.init(parts: EncodingParts(view, suffix ? .whole : layout, codec, .old))!
    }
}
