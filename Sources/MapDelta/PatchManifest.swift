import MapModel
package import MapPlatform

/// How a payload in a patch container is encoded.
package enum PatchEncoding: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// The raw bytes of the file.
    case stored = 0
    /// One zstd frame of the file, no reference.
    case zstd = 1
    /// One zstd frame of the file with the old file as raw-content prefix (`--patch-from`).
    case delta = 2
    /// See-through delta of a file holding deflate streams (gzip, zip, OSM PBF): a
    /// ``DeflateRecipe``, then one zstd frame of the new file's expansion (its streams
    /// inflated in place) with the old file's expansion as prefix; zlib rebuilds the exact
    /// compressed bytes.
    case deflateDelta = 3
    /// A delta cut into segments (``SegmentedDelta``): one zstd frame per segment of the
    /// new file, each against a window of the old file, each with its SHA-256. For large
    /// files: bounded memory, any size, resumable.
    case segmentedDelta = 4
    /// A delta whose prefix is several files (``CrossReferences``): other old files of the
    /// group and new files the patch already produced, then the file's own old version.
    case crossDelta = 5
    /// A bsdiff-class delta (``SuffixDelta``): steps found with a suffix array of the old
    /// file, their byte differences and extra bytes in three zstd frames.
    case suffixDelta = 6
    /// A see-through delta (as ``deflateDelta``) of a file of a format MapLoader does not
    /// parse (PMTiles, MBTiles, …): the old file's streams are found by
    /// ``DeflateStreams/scan(in:)`` (gzip members and zlib streams at any offset) instead of
    /// by parsing its container. Its own value, so a client that predates the scan refuses
    /// the patch up front (and fetches the full archive) instead of expanding the old file
    /// differently.
    case scannedDeflateDelta = 7
    /// A scanned see-through delta (as ``scannedDeflateDelta``) of an SQLite database
    /// (MBTiles): both files are first gathered (``GatherMap``, from ``SQLiteOverflow``) so
    /// that a tile cut over overflow pages is one gzip stream; the payload starts with the
    /// new file's gather map, compressed against the old file's, which the client computes.
    case gatheredDeflateDelta = 8
    /// A see-through delta (as ``deflateDelta``) whose expansion is sent as a
    /// ``SegmentedDelta`` (each segment against a window of the old expansion) instead of
    /// one frame: memory bounded by a segment whatever the file's size, resumable after the
    /// last finished segment. For expansions larger than the segment threshold.
    case segmentedDeflateDelta = 9
    /// ``scannedDeflateDelta`` with a segmented expansion (see ``segmentedDeflateDelta``).
    case segmentedScannedDeflateDelta = 10
    /// ``gatheredDeflateDelta`` with a segmented expansion (see ``segmentedDeflateDelta``).
    case segmentedGatheredDeflateDelta = 11
    /// A segmented delta (as ``segmentedDelta``) whose windows lie in several files
    /// (``CrossReferences``, the file's own old version last): each segment's old offset
    /// addresses the references one after another, and its window lies inside one of them.
    /// Files are mapped, never joined, so references of any size cost no memory or disk.
    case segmentedCrossDelta = 12
    /// A ``suffixDelta`` whose extra bytes are differences from the new file's bytes a
    /// stride before (``SuffixDelta``): new numbers in columns compress a third smaller.
    /// Its own value, so a client that predates the filter refuses the patch up front and
    /// fetches the full archive.
    case filteredSuffixDelta = 13
    /// A see-through delta (as ``deflateDelta``) whose expansion is a filtered suffix delta
    /// (``SuffixDelta``, its stride byte first, 0 for none) against the old expansion:
    /// shifted and new numbers inside the streams cost what they cost in raw files, and
    /// the client streams the expansion with no window besides the mapped old one.
    case suffixDeflateDelta = 14
    /// ``scannedDeflateDelta`` with a suffix-delta expansion (see ``suffixDeflateDelta``).
    case suffixScannedDeflateDelta = 15
    /// ``gatheredDeflateDelta`` with a suffix-delta expansion (see ``suffixDeflateDelta``).
    case suffixGatheredDeflateDelta = 16
    /// One raw LZMA2 stream of the file, no reference (``LzmaDelta``): for small files,
    /// where its range coder beats zstd's entropy stages.
    case lzma = 17
    /// One raw LZMA2 stream of the file with the old file preloaded in its dictionary
    /// (``LzmaDelta``), as ``delta`` is with zstd.
    case lzmaDelta = 18
    /// References (``CrossReferences``) as ``crossDelta``, then one raw LZMA2 stream with the
    /// referenced files joined preloaded in its dictionary (``LzmaDelta``).
    case lzmaCrossDelta = 19
    /// References (``CrossReferences``) as ``crossDelta``, then one zstd frame of a large
    /// file (above the segment threshold) against the referenced files joined, which may
    /// hold up to ``CrossReferences/maxWholePrefixBytes``. A client decodes a frame of
    /// more than ``ZstdDelta/streamedContentLimit`` in one pass into the new file mapped
    /// for writing, so its heap holds no window; elsewhere it streams, with a window the
    /// size of the file. Its own value, so a client that caps references at
    /// ``CrossReferences/maxPrefixBytes`` refuses the patch up front and fetches the full
    /// archive.
    case wholeCrossDelta = 20
    /// A suffix delta (``SuffixDelta``, its stride byte first, 0 for none) whose add bytes
    /// are the old file's with replaced runs (``SuffixDelta/Form/sparse``) instead of a
    /// frame of differences: a 187 MB file with a few hundred scattered edits costs its
    /// edits, not 4 bytes per 128 KiB of zero differences. Its own value, so a client that
    /// predates it refuses the patch up front and fetches the full archive.
    case sparseSuffixDelta = 21
    /// A see-through payload of a file whose zstd frames are found by a scan
    /// (``EncodingParts/View/scannedZstd``: a PMTiles archive of zstd tiles): the recipe as
    /// for ``scannedDeflateDelta``, its parameter sets zstd's and the zstd version that
    /// rebuilds them first, then one zstd frame of the expansion against the old one. A
    /// site lists ``PatchCodecs/zstdFrames`` for its patch, so a client of another zstd
    /// version plans the full archive instead. Its own value, as are the two below, so a
    /// client that predates it refuses the patch up front.
    case scannedZstdDelta = 22
    /// As ``scannedZstdDelta``, the expansion a ``SegmentedDelta``.
    case segmentedScannedZstdDelta = 23
    /// As ``scannedZstdDelta``, the expansion a suffix delta (``SuffixDelta/Form/expansion``).
    case suffixScannedZstdDelta = 24

    /// The optional codec a payload of this encoding needs, which a client build may lack
    /// (``PatchCodecs``): `"lzma"` for the LZMA2 encodings; `nil` for the rest, which every
    /// build decodes (zstd, and zlib for see-through deltas).
    package var optionalCodec: String? {
        if parts.codec == .lzma { return PatchCodecs.lzma }
        return parts.view.streamCodec == .zstd ? PatchCodecs.zstdFrames : nil
    }

    /// Whether a payload of this encoding can patch an old file (everything but the file
    /// on its own, stored or compressed).
    package var isDelta: Bool { parts.reference != .none }

    /// Whether a payload of this encoding is a suffix delta of the raw file (``SuffixDelta``).
    package var isSuffix: Bool { suffixForm != nil }

    /// How a suffix delta of the raw file is laid out (``SuffixDelta/Form``); `nil` for
    /// every other encoding, a see-through expansion's included.
    package var suffixForm: SuffixDelta.Form? { parts.view == .bytes ? parts.codec.suffixForm : nil }

    /// Whether a payload of this encoding is decoded as one stream into the file, with no
    /// segments, see-through expansion or resume checkpoint: such a file may come without
    /// a digest in form 3 (``PatchFormat``), as the applier hashes it as it writes it. (A
    /// wide cross-file frame is for files above the segment threshold, which always have one.)
    package var streamsWhole: Bool { parts.view == .bytes && parts.layout == .whole && parts.reference != .wideCross }

    /// The name used in manifests, stats and messages.
    package var description: String {
        switch self {
        case .stored: return "stored"
        case .zstd: return "zstd"
        case .delta: return "delta"
        case .deflateDelta: return "deflate-delta"
        case .segmentedDelta: return "segmented-delta"
        case .crossDelta: return "cross-delta"
        case .suffixDelta: return "suffix-delta"
        case .filteredSuffixDelta: return "filtered-suffix-delta"
        case .scannedDeflateDelta: return "scanned-deflate-delta"
        case .gatheredDeflateDelta: return "gathered-deflate-delta"
        case .segmentedDeflateDelta: return "segmented-deflate-delta"
        case .segmentedScannedDeflateDelta: return "segmented-scanned-deflate-delta"
        case .segmentedGatheredDeflateDelta: return "segmented-gathered-deflate-delta"
        case .suffixDeflateDelta: return "suffix-deflate-delta"
        case .suffixScannedDeflateDelta: return "suffix-scanned-deflate-delta"
        case .scannedZstdDelta: return "scanned-zstd-delta"
        case .segmentedScannedZstdDelta: return "segmented-scanned-zstd-delta"
        case .suffixScannedZstdDelta: return "suffix-scanned-zstd-delta"
        case .suffixGatheredDeflateDelta: return "suffix-gathered-deflate-delta"
        case .segmentedCrossDelta: return "segmented-cross-delta"
        case .lzma: return "lzma"
        case .lzmaDelta: return "lzma-delta"
        case .lzmaCrossDelta: return "lzma-cross-delta"
        case .wholeCrossDelta: return "whole-cross-delta"
        case .sparseSuffixDelta: return "sparse-suffix-delta"
        }
    }
}

/// The per-file operations of one patch: which old files it reads, how every file of the
/// target tree is produced, and which old paths are gone.
///
/// The target list is the complete new tree, so an applier can build it in an empty
/// directory and check that it ends up with exactly these files and bytes.
package struct PatchManifest: Sendable, Equatable {
    /// An old file the patch reads: a copy source or a delta base.
    package struct Source: Sendable, Equatable {
        /// Path relative to the old tree.
        package var path: String
        /// SHA-256 the old file must have before the patch uses it; `nil` where the patch
        /// (form 2, a file under ``PatchFormat/sourceDigestFrom``) leaves it to the tree hash.
        package var sha256: SHA256Hash?

        /// An old file at `path` with digest `sha256`.
        package init(path: String, sha256: SHA256Hash?) {
            self.path = path
            self.sha256 = sha256
        }
    }

    /// Where the bytes of one payload sit and how they are encoded.
    package struct Payload: Sendable, Equatable {
        /// The encoding of the payload bytes.
        package var encoding: PatchEncoding
        /// Length of the payload in the container.
        package var length: Int64
        /// Offset of the payload from the start of the container (filled in when reading).
        package var offset: Int64

        /// A payload of `length` bytes in `encoding`; `offset` is set by the reader.
        package init(encoding: PatchEncoding, length: Int64, offset: Int64 = 0) {
            self.encoding = encoding
            self.length = length
            self.offset = offset
        }
    }

    /// How one target file is produced.
    package enum Origin: Sendable, Equatable {
        /// Unchanged: the old file at the same path, hard-linked.
        case unchanged
        /// `copy`/`rename` by content hash: the bytes of old file `source` (an index into
        /// ``PatchManifest/sources``), hard-linked. Covers moved and duplicated files.
        case copy(source: Int)
        /// `add`: new content from a payload encoded ``PatchEncoding/stored`` or ``PatchEncoding/zstd``.
        case add(Payload)
        /// `patch`: a ``PatchEncoding/delta`` payload decoded against old file `source`.
        case patch(source: Int, Payload)

        /// The payload this origin reads from the container, if any.
        package var payload: Payload? {
            switch self {
            case .unchanged, .copy: return nil
            case .add(let payload), .patch(_, let payload): return payload
            }
        }
    }

    /// One file of the target tree.
    package struct Target: Sendable, Equatable {
        /// Path relative to the new tree.
        package var path: String
        /// Size of the file in bytes.
        package var size: Int64
        /// SHA-256 of the file; `nil` for a file taken over as it is (unchanged or copied)
        /// from an old file the patch gives no digest for: its digest is the old file's, which
        /// the applier hashes, and the manifest's ``PatchManifest/treeHash`` covers it; and
        /// (form 3) for a small file a payload produces, which the applier hashes as it writes.
        package var sha256: SHA256Hash?
        /// How the file is produced.
        package var origin: Origin

        /// A target file at `path` with `size` bytes and digest `sha256`, produced by `origin`.
        package init(path: String, size: Int64, sha256: SHA256Hash?, origin: Origin) {
            self.path = path
            self.size = size
            self.sha256 = sha256
            self.origin = origin
        }

        /// The digest a large, segmented or see-through produced file must come out with: such
        /// targets always carry one (the decoder refuses them without), as it names their
        /// resume checkpoints; were one missing, no file matches the 32 zero bytes, so the
        /// check fails closed.
        package var producedDigest: SHA256Hash { sha256 ?? Self.noDigest }
        private static let noDigest = SHA256Hash(bytes: [UInt8](repeating: 0, count: 32))!
    }

    /// Old files the patch reads, referenced by index from ``Origin``.
    package var sources: [Source]
    /// Every file of the target tree, sorted by path.
    package var targets: [Target]
    /// `delete` operations: old paths with no counterpart in the target tree.
    package var deletions: [String]
    /// The ``TreeHash`` of the target tree (forms 2 and 3): what the applied files must hash
    /// to, digests taken over from old files included; `nil` in form 1, whose every target
    /// carries its digest, and in a site's form-3 patch, whose patch edge in the signed
    /// manifest names it (the applier is then given it).
    package var treeHash: SHA256Hash?

    /// Whether the old tree's files that ``targets`` and ``deletions`` do not name are kept
    /// as they are (form 3, which does not list them): ``PatchManifestDecoder/keepingUnlisted(_:oldFiles:)``
    /// adds them to the targets once the old tree is known.
    package var keepsUnlisted: Bool

    /// A manifest from its three lists and, for forms 2 and 3, the target tree's hash.
    package init(
        sources: [Source], targets: [Target], deletions: [String], treeHash: SHA256Hash? = nil, keepsUnlisted: Bool = false
    ) {
        self.sources = sources
        self.targets = targets
        self.deletions = deletions
        self.treeHash = treeHash
        self.keepsUnlisted = keepsUnlisted
    }

    /// The total size of the target tree in bytes.
    package var targetBytes: Int64 { targets.reduce(0) { $0 + $1.size } }
}
