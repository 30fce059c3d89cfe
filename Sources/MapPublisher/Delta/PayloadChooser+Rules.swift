import Foundation
import MapDelta
import MapModel
import MapPlatform

/// The rules and estimates that leave trials out (each with the measurement behind it),
/// and the notes they leave in the publish log.
extension PayloadChooser {
    /// A fast zstd delta of `path` against `base` (level ``fastLevel``, long-distance
    /// matching) in `file`, with the note for the publish log, where `rival` (the
    /// suffix-array delta, or the payload `rivalName` names) is at most ``TrialPolicy/deepSkipPercent`` percent of it: the publish-level
    /// search (`search`, named in the note) is then not run, as it cannot end that far below
    /// the fast delta on map data. Nil, and the fast delta wasted, where the rival is larger.
    func fastDeltaRulesOut(
        _ search: String, rival: Int64, rivalName: String = "the suffix-array delta", path: String, base: UnsafeRawBufferPointer,
        compressor: ZstdCompressor, into file: String
    ) throws -> (length: Int64, note: String)? {
        rivalRulesOut(search, rival: rival, rivalName: rivalName, fast: try fastDelta(path: path, base: base, compressor: compressor, into: file))
    }

    /// The fast zstd delta of ``fastDeltaRulesOut(_:rival:rivalName:path:base:compressor:into:)``: its length.
    func fastDelta(path: String, base: UnsafeRawBufferPointer, compressor: ZstdCompressor, into file: String) throws -> Int64 {
        try compressor.encode(
            path: path, prefix: base, level: Self.fastLevel, longDistanceMatching: true, search: .cli,
            into: try SystemFile.createOrTruncate(file))
    }

    /// The rule of ``fastDeltaRulesOut(_:rival:rivalName:path:base:compressor:into:)`` for a fast
    /// delta of `fast` bytes: that length and the note where `rival` rules `search` out.
    func rivalRulesOut(_ search: String, rival: Int64, rivalName: String = "the suffix-array delta", fast: Int64)
        -> (length: Int64, note: String)?
    {
        guard policy.holds(.rivalFarBelowFastDelta, TrialFacts(newSize: 0, rival: rival, fastDelta: fast)) else { return nil }
        return (
            fast,
            "delta: \(search) skipped: \(rivalName) (\(rival) B) is below \(TrialPolicy.deepSkipPercent)% of a level-\(Self.fastLevel) delta (\(fast) B)"
        )
    }

    /// For a raw file above the segment threshold whose whole-file suffix-array delta is
    /// `suffix` bytes: the publish log's note saying why its segmented delta is not made,
    /// where `suffix` is at most ``TrialPolicy/deepSkipPercent`` percent of a fast zstd delta of the
    /// whole file against the whole old file (``fastDeltaRulesOut(_:rival:path:base:compressor:into:)``);
    /// nil where the segments are made. Each segment sees only a window of the old file, so
    /// its publish-level frames end no further below the fast delta than a whole-file deep
    /// search does. On a 187 MB gazetteer with 350 scattered edits the segments were most
    /// of the patch's time (three level-19 encodes of 64 MiB) for 38.4 kB against the
    /// suffix-array delta's 14.8 kB.
    func segmentsRuledOut(by suffix: Int64, rivalName: String = "the suffix-array delta", newPath: String, basePath: String) throws
        -> String?
    {
        guard skipByEstimate, let newSize = FileStatus.of(newPath)?.size else { return nil }
        let base = try MappedFile.source(basePath, displayPath: basePath)
        guard ZstdDelta.deltaLimitReason(oldSize: Int64(base.bytes.count), newSize: newSize) == nil else { return nil }
        Self.largeEncodes.take()
        defer { Self.largeEncodes.give() }
        return try fastDeltaRulesOut(
            "the segmented delta", rival: suffix, rivalName: rivalName, path: newPath, base: base.bytes, compressor: try ZstdCompressor(),
            into: workDirectory + "/delta-fast.payload")?.note
    }

    /// The level of the fast delta that can rule out the deep search (``encodeDelta(_:newSize:base:rival:lzma:)``).
    static let fastLevel = 3
    /// What the publish log says of a large file's delta (``encodeDelta(_:newSize:base:rival:lzma:)``).
    static let deepOnlyNote = "delta: the deep search alone (the file or its old version is over \(TrialPolicy.deepAloneFrom >> 20) MiB)"

    /// The rules that leave trials out, with estimates as the options say.
    var policy: TrialPolicy { TrialPolicy(estimates: skipByEstimate) }

    /// Whether `newSize` bytes against `oldSize` are a small pair (``TrialRule/smallPair``).
    func isSmallPair(newSize: Int64, oldSize: Int) -> Bool {
        policy.holds(.smallPair, TrialFacts(newSize: newSize, oldSize: Int64(oldSize)))
    }

    /// Files above this size are large: one whole-file encode costs seconds per trial.
    static let largeFile: Int64 = 16 << 20

    /// For a file above ``TrialPolicy/plainZstdEstimateFrom`` whose delta is `deltaLength`: a note saying why plain zstd (a
    /// whole-file encode without the old file) is not tried, when samples of the file
    /// compressed at the same level put it above twice the delta; `nil` when it is tried.
    /// Plain zstd of the whole file finds more repeats than the samples do, but not twice
    /// as many on map data (on timezone polygons, 58 MB, the samples said 47.5 MB, the
    /// whole file gave 37.7 MB, against a 4.1 MB delta).
    func plainZstdRulesOut(_ deltaLength: Int64, path: String, newSize: Int64) -> String? {
        guard policy.estimates, newSize > TrialPolicy.plainZstdEstimateFrom, let file = try? MappedFile.source(path, displayPath: path) else {
            return nil
        }
        let size = file.bytes.count
        let sample = min(TrialPolicy.estimateSampleLength, size)
        var sampled: Int64 = 0
        var compressed: Int64 = 0
        for index in 0..<TrialPolicy.estimateSamples {
            let offset = (size - sample) * index / (TrialPolicy.estimateSamples - 1)
            let bytes = Array(file.bytes[offset..<(offset + sample)])
            guard let frame = try? ZstdFrame.compress(bytes, level: level) else { return nil }
            compressed += Int64(frame.count)
            sampled += Int64(bytes.count)
        }
        guard sampled > 0 else { return nil }
        let estimate = compressed * newSize / sampled
        guard policy.holds(.plainZstdEstimate, TrialFacts(newSize: newSize, delta: deltaLength, plainZstdEstimate: estimate)) else {
            return nil
        }
        return
            "plain zstd not tried: \(TrialPolicy.estimateSamples) MiB of samples put it near \(estimate) B, over twice the delta (\(deltaLength) B)"
    }

    /// Whether the see-through delta in `choice` is below 1/64 of the file, so that the
    /// byte-level trials (several whole-file encodes, each slower than the see-through
    /// one) are skipped: a byte-level delta of changed deflate streams pays for the
    /// changed compressed bytes, which such a change spreads over most of a stream. Says so
    /// in the note when it decides.
    func seeThroughSuffices(_ choice: inout Choice, newSize: Int64) -> Bool {
        let facts = TrialFacts(newSize: newSize, seeThrough: choice.length, keptSeeThrough: choice.encoding.parts.view.seesThrough)
        guard policy.holds(.seeThroughSuffices, facts) else { return false }
        choice.notes.append(PayloadNote(.trial, "byte-level trials skipped: the see-through delta is below 1/64 of the file"))
        return true
    }

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
    /// Files of any size with ``TrialPolicy/byteLevelEstimateAnchors`` anchors get it. On the gzip
    /// sample world's v1→v3 and v2→v3 patches it left out the trials of 29 files of
    /// 16-150 kB and, once a gate of 16 kB went, of 89 of 216 tiles and tables below it,
    /// for not one byte more: the byte-level delta won on one file (by 31 B), which the
    /// estimate kept. The patches' trials took 3.0 s instead of 4.2 s.
    func byteLevelRulesOut(_ choice: inout Choice, newPath: String, newSize: Int64, basePath: String) -> Bool {
        guard policy.estimates, choice.encoding.parts.view.seesThrough,
            let (novel, anchors) = CrossFileEstimate.novelAnchors(of: newPath, against: basePath)
        else { return false }
        let facts = TrialFacts(newSize: newSize, seeThrough: choice.length, keptSeeThrough: true, anchors: anchors, novelAnchors: novel)
        guard policy.holds(.compressedBytesAreNew, facts) else { return false }
        let lacking = TrialPolicy.lacking(newSize, novel: novel, of: anchors)
        choice.byteLevelRuledOut = true
        choice.notes.append(
            PayloadNote(
                .trial,
                "byte-level trials skipped: \(novel) of \(anchors) anchors of the file are not in its old version "
                    + "(about \(lacking) B to send against the see-through delta's \(choice.length) B)"))
        return true
    }
}
