import Foundation
import MapDelta
import MapModel
import MapPlatform

/// Settings for ``PatchBuilder/build(from:to:output:options:)``.
package struct PatchOptions: Sendable {
    /// zstd level for delta and plain payloads (1...22). The default, 19, was the best size
    /// for the time on record-structured map data with 2% of records edited: on a 61.6 MB
    /// pair 306,907 B in ~80 s (`zstd -19 --long=31 --patch-from`: 305,880 B in ~87 s;
    /// level 18: 310 KB; 15: 406 KB; 12: 491 KB in 1.4 s); on 1.3–5.3 MB files 0.03–1.8%
    /// smaller than the CLI. Level 22 is 7% smaller on the 61.6 MB pair for twice the time
    /// and several times the encoder memory.
    package var level: Int
    /// zstd level for the manifest section.
    package var manifestLevel: Int
    /// For a new path with no old file at that path, look for a delta base among old files
    /// with the same name, else the same extension and a similar size (catches files that
    /// were renamed and edited).
    package var findRenamedBases: Bool
    /// Where the builder keeps its payload spool and scratch files; `nil`: the system's
    /// temporary folder.
    package var workDirectory: URL?
    /// Files larger than this get a segmented delta (``SegmentedDelta``): decoding then
    /// needs one segment's memory and the mapped old file whatever the file's size, and a
    /// killed apply resumes after its last segment. Smaller files get one zstd frame,
    /// whose decoder holds the whole file (at most this much).
    package var segmentThreshold: Int64 = 64 << 20
    /// Bytes of new file per segment.
    package var segmentLength: Int64 = 32 << 20
    /// Old bytes before and after each segment's position in its window.
    package var segmentMargin: Int64 = 16 << 20
    /// Let a changed file's delta also read other files of the group (new files already
    /// produced, other old files), and keep it when it is smaller.
    package var crossFileReferences = true
    /// Skip encodings a cheap estimate says cannot win (byte-level trials of a file whose
    /// see-through delta is below 1/64 of it); the patch notes each skip. `false` tries
    /// every encoding, to compare them.
    package var skipByEstimate = true
    /// Whether a form-3 manifest carries the tree hash of the result. A site's patch leaves it
    /// out: the signed manifest's patch edge names the result's tree hash (``PatchEdge``),
    /// which the client passes to the applier, so 32 bytes per patch are not sent twice.
    package var embedsTreeHash = true
    /// Beside a segmented expansion of a see-through file, try the suffix-array delta of the
    /// whole expansion, up to ``SuffixEncoder/maxWholeFileSize`` (its decoder needs no
    /// segments; its memory is the mapped old expansion and three stream decoders), and
    /// keep it where smaller: one gzip stream of 187 MB of gazetteer records, 2.78 MB
    /// instead of 3.4 MB. Its apply resumes as a segmented one does: the finished
    /// expansion is checkpointed with its SHA-256, then the rebuild every few MB.
    package var wholeFileSuffix = true
    /// Beside a segmented expansion of a see-through file, try one zstd frame of the whole
    /// expansion against the whole old expansion (publish-level search, long-distance
    /// matching), and keep it where smaller: it also finds records that moved beyond a
    /// segment's window and those the new expansion repeats itself. The client decodes it
    /// in one pass into a mapped file, with no window on its heap
    /// (``ZstdDelta/streamedContentLimit``).
    package var wholeExpansionFrame = true
    /// Beside (or, with estimates, instead of) a segmented cross-file delta of a file above
    /// 16 MiB, try one zstd frame of the whole file against its references joined
    /// (``PatchEncoding/wholeCrossDelta``), up to 256 MiB files and 1 GiB of references:
    /// it finds what the file repeats from any reference, wherever it lies, where a
    /// segment sees only windows near its own place. The client decodes it in one pass
    /// into the new file, mapped.
    package var wholeCrossFrame = true
    /// The same trial for a raw (not see-through) file above `segmentThreshold`: a 187 MB
    /// gazetteer with 350 scattered edits updates in 23.6 kB instead of 38.4 kB. The
    /// client applies it as it applies a segmented delta: into a copy-on-write clone of
    /// the old file writing only the 16 KiB windows that changed, checkpointed every few MB
    /// (``PatchRun/inPlaceSuffixSize``).
    package var wholeRawFileSuffix = true
    /// Whether LZMA2 payloads are tried (``PublishOptions/lzma``): only where this build has
    /// liblzma.
    package var lzma = PatchCodecs.available.contains(PatchCodecs.lzma)
    /// Whether a file of no known container is also scanned for zstd frames and seen through
    /// them where this build's libzstd rebuilds them byte for byte
    /// (``EncodingParts/View/scannedZstd``): a PMTiles archive of zstd tiles. Off by
    /// default: only a client that links the same zstd version can apply such a patch
    /// (``PatchCodecs/zstdFrames``); one of another version downloads the full archive.
    package var zstdFrames = false
    /// Segments encoded at once (default: one per core).
    package var segmentJobs: Int = max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// Changed files of one patch whose payloads are chosen at once (default: one per
    /// core). The patch's bytes are the same whatever the number.
    package var fileJobs: Int = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// Options with the given level, manifest level and rename detection.
    /// With `segmentLength`, files larger than twice it are cut into segments of that
    /// size, each with a window of half a segment's old bytes on both sides.
    package init(
        level: Int = ZstdDelta.defaultLevel, manifestLevel: Int = 19, findRenamedBases: Bool = true,
        workDirectory: URL? = nil, segmentLength: Int64? = nil
    ) {
        self.workDirectory = workDirectory
        if let segmentLength {
            self.segmentLength = segmentLength
            segmentThreshold = 2 * segmentLength
            segmentMargin = segmentLength / 2
        }
        self.level = level
        self.manifestLevel = manifestLevel
        self.findRenamedBases = findRenamedBases
    }
}
