import Foundation
import MapDelta
import MapModel
import MapPlatform

/// The rules and estimates that leave trials out (each with the measurement behind it),
/// and the notes they leave in the publish log.
extension PayloadChooser {
    /// A fast zstd delta of `path` against `base` (level ``fastLevel``, long-distance
    /// matching) in `file`, with the note for the publish log, where `rival` (the
    /// suffix-array delta, or the payload `rivalName` names) is at most ``deepSkipPercent`` percent of it: the publish-level
    /// search (`search`, named in the note) is then not run, as it cannot end that far below
    /// the fast delta on map data. Nil, and the fast delta wasted, where the rival is larger.
    func fastDeltaRulesOut(
        _ search: String, rival: Int64, rivalName: String = "the suffix-array delta", path: String, base: UnsafeRawBufferPointer,
        compressor: ZstdCompressor, into file: String
    ) throws -> (length: Int64, note: String)? {
        let fast = try compressor.encode(
            path: path, prefix: base, level: Self.fastLevel, longDistanceMatching: true, search: .cli,
            into: try SystemFile.createOrTruncate(file))
        guard rival * 100 <= fast * Self.deepSkipPercent else { return nil }
        return (
            fast,
            "delta: \(search) skipped: \(rivalName) (\(rival) B) is below \(Self.deepSkipPercent)% of a level-\(Self.fastLevel) delta (\(fast) B)"
        )
    }

    /// For a raw file above the segment threshold whose whole-file suffix-array delta is
    /// `suffix` bytes: the publish log's note saying why its segmented delta is not made,
    /// where `suffix` is at most ``deepSkipPercent`` percent of a fast zstd delta of the
    /// whole file against the whole old file (``fastDeltaRulesOut(_:rival:path:base:compressor:into:)``);
    /// nil where the segments are made. Each segment sees only a window of the old file, so
    /// its publish-level frames end no further below the fast delta than a whole-file deep
    /// search does. On a 187 MB gazetteer with 350 scattered edits the segments were most
    /// of the patch's time (three level-19 encodes of 64 MiB) for 38.4 kB against the
    /// suffix-array delta's 14.8 kB.
    func segmentsRuledOut(by suffix: Int64, newPath: String, basePath: String) throws -> String? {
        guard skipByEstimate, let newSize = FileStatus.of(newPath)?.size else { return nil }
        let base = try MappedFile.source(basePath, displayPath: basePath)
        guard ZstdDelta.deltaLimitReason(oldSize: Int64(base.bytes.count), newSize: newSize) == nil else { return nil }
        Self.largeEncodes.wait()
        defer { Self.largeEncodes.signal() }
        return try fastDeltaRulesOut(
            "the segmented delta", rival: suffix, path: newPath, base: base.bytes, compressor: try ZstdCompressor(),
            into: workDirectory + "/delta-fast.payload")?.note
    }

    /// The level of the fast delta that can rule out the deep search (``encodeDelta(_:newSize:base:rival:lzma:)``).
    static let fastLevel = 3
    /// A rival payload at most this percentage of the fast delta rules out the deep search
    /// (and the level-19 delta of a see-through expansion). The publish-level delta ended
    /// at 59-86% of the fast one on the bench's files (a PNG's pixels: 59%, timezone
    /// polygons: 74%, a GeoJSON index: 78%).
    static let deepSkipPercent: Int64 = 55

    /// What the publish log says of a large file's delta (``encodeDelta(_:newSize:base:rival:lzma:)``).
    static let deepOnlyNote = "delta: the deep search alone (the file or its old version is over \(deepAloneFrom >> 20) MiB)"

    /// A file or old version above this size gets the deep search alone of the zstd delta
    /// variants, as one of the process's large encodes (``encodeDelta(_:newSize:base:rival:rivalName:lzma:)``).
    /// It was 16 MiB: a 16.7 MB gazetteer cut (just below it) spent 45.8 s on four variants
    /// for the 336,323 B the deep search alone made in 20.5 s.
    static let deepAloneFrom: Int64 = 8 << 20

    /// How far below the CLI's delta of `length` bytes its long-distance, worker and deep
    /// variants can end on a pair larger than a small one: a fifth (timezone polygons: the
    /// deep search 14% below at 58 MB, 2 B of 17,437 at 2 MB).
    static func variantReach(_ length: Int64) -> Int64 { length / 5 }

    /// A file and old version both up to this size are a small pair: the delta trials
    /// skip the worker and deep variants, and the long-distance one where another codec's
    /// delta is ahead of the CLI's (``encodeDelta(_:newSize:base:rival:lzma:)``), and plain zstd is
    /// not tried beside a delta.
    static let smallPair: Int64 = 1 << 20

    /// Whether the small-pair rules apply (``smallPair``; not when estimates are off).
    func isSmallPair(newSize: Int64, oldSize: Int) -> Bool {
        skipByEstimate && newSize <= Self.smallPair && Int64(oldSize) <= Self.smallPair
    }

    /// Files above this size are large: one whole-file encode costs seconds per trial.
    static let largeFile: Int64 = 16 << 20

    /// Samples of a large file zstd compresses to estimate plain zstd of all of it.
    static let estimateSamples = 4
    static let estimateSampleLength = 1 << 20

    /// Files above this size get the plain-zstd estimate (``plainZstdRulesOut(_:path:newSize:)``):
    /// twice the samples, so that the estimate costs at most half the encode it can save.
    /// A 16.7 MB gazetteer cut (its delta 336 kB) spent 15.3 s on a plain zstd payload of
    /// 2.77 MB when the estimate began at 16 MiB.
    static let plainZstdEstimateFrom = Int64(2 * estimateSamples * estimateSampleLength)

    /// For a file above ``plainZstdEstimateFrom`` whose delta is `deltaLength`: a note saying why plain zstd (a
    /// whole-file encode without the old file) is not tried, when samples of the file
    /// compressed at the same level put it above twice the delta; `nil` when it is tried.
    /// Plain zstd of the whole file finds more repeats than the samples do, but not twice
    /// as many on map data (on timezone polygons, 58 MB, the samples said 47.5 MB, the
    /// whole file gave 37.7 MB, against a 4.1 MB delta).
    func plainZstdRulesOut(_ deltaLength: Int64, path: String, newSize: Int64) -> String? {
        guard skipByEstimate, newSize > Self.plainZstdEstimateFrom, let file = try? MappedFile.source(path, displayPath: path) else {
            return nil
        }
        let size = file.bytes.count
        let sample = min(Self.estimateSampleLength, size)
        var sampled: Int64 = 0
        var compressed: Int64 = 0
        for index in 0..<Self.estimateSamples {
            let offset = (size - sample) * index / (Self.estimateSamples - 1)
            let bytes = Array(file.bytes[offset..<(offset + sample)])
            guard let frame = try? ZstdFrame.compress(bytes, level: level) else { return nil }
            compressed += Int64(frame.count)
            sampled += Int64(bytes.count)
        }
        guard sampled > 0 else { return nil }
        let estimate = compressed * newSize / sampled
        guard deltaLength * 2 < estimate else { return nil }
        return "plain zstd not tried: \(Self.estimateSamples) MiB of samples put it near \(estimate) B, over twice the delta (\(deltaLength) B)"
    }

    /// Whether the see-through delta in `choice` is below 1/64 of the file, so that the
    /// byte-level trials (several whole-file encodes, each slower than the see-through
    /// one) are skipped: a byte-level delta of changed deflate streams pays for the
    /// changed compressed bytes, which such a change spreads over most of a stream. Says so
    /// in the note when it decides.
    func seeThroughSuffices(_ choice: inout Choice, newSize: Int64) -> Bool {
        guard skipByEstimate, choice.encoding.parts.view.seesThrough, choice.length * Self.plainZstdSkipRatio < newSize else {
            return false
        }
        choice.notes.append(PayloadNote(.trial, "byte-level trials skipped: the see-through delta is below 1/64 of the file"))
        return true
    }

    /// The fewest anchors of a file the byte-level estimate decides on (about 2 kB of
    /// content): with fewer, one anchor more or less swings it, and the trials are cheap.
    static let byteLevelEstimateAnchors = 16

    /// Whether the byte-level trials (the cross-file one too) of a file with a see-through
    /// delta are skipped because
    /// content-defined anchors (``CrossFileEstimate``) say its compressed bytes hold over
    /// four times the see-through payload that its old version lacks: a byte-level delta
    /// pays for those bytes, and compressed bytes do not compress again. A change inside a
    /// deflate stream rewrites the rest of the stream: of a 49 MB gzip file of timezone
    /// polygons all but 97 of 370,720 anchors were new, and skipping its byte-level trials
    /// (whole-file encodes of 49 MB of compressed bytes) with the see-through suffix delta
    /// took its publish from 176 s to 45–52 s. Says so in the note when it decides.
    ///
    /// Files of any size with ``byteLevelEstimateAnchors`` anchors get it. On the gzip
    /// sample world's v1→v3 and v2→v3 patches it left out the trials of 29 files of
    /// 16-150 kB and, once a gate of 16 kB went, of 89 of 216 tiles and tables below it,
    /// for not one byte more: the byte-level delta won on one file (by 31 B), which the
    /// estimate kept. The patches' trials took 3.0 s instead of 4.2 s.
    func byteLevelRulesOut(_ choice: inout Choice, newPath: String, newSize: Int64, basePath: String) -> Bool {
        guard skipByEstimate, choice.encoding.parts.view.seesThrough,
            let (novel, anchors) = CrossFileEstimate.novelAnchors(of: newPath, against: basePath),
            anchors >= Self.byteLevelEstimateAnchors
        else { return false }
        let lacking = newSize * Int64(novel) / Int64(anchors)
        guard lacking > 4 * choice.length else { return false }
        choice.byteLevelRuledOut = true
        choice.notes.append(
            PayloadNote(
                .trial,
                "byte-level trials skipped: \(novel) of \(anchors) anchors of the file are not in its old version "
                    + "(about \(lacking) B to send against the see-through delta's \(choice.length) B)"))
        return true
    }
}
