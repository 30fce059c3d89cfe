import MapDelta
import MapPlatform

/// Whether a cross-file delta can beat the delta from the base alone, estimated from
/// content-defined anchors: positions where a gear rolling hash (the last 64 bytes) has
/// its top bits zero, at least 64 bytes apart (about one in 128 bytes), in each file (the
/// anchors segmented deltas place their windows by). An anchor of the new file that the base has is content the
/// base delta already matches; one that only another
/// reference has is what a cross-file delta could match in addition; one that no file
/// has is new content either delta pays for. One pass over each file; the anchors are
/// thinned for a new file over 64 MiB (one bit more of the hash per doubling), so the
/// sets hold about a million anchors per file of that size at most (the references are
/// at most four times the file): about 100 MB whatever the size.
struct CrossFileEstimate: Equatable {
    /// Distinct anchors of the new file.
    var anchors = 0
    /// Of those, found in the base.
    var inBase = 0
    /// Found in another reference but not in the base.
    var elsewhere = 0

    /// Anchors in no file: content both deltas pay for.
    var novel: Int { anchors - inBase - elsewhere }

    /// Whether the other references could save so little (under a tenth of what the
    /// base delta pays for) that the trial, a whole-file encode, is not worth its time.
    /// Where a cross-file delta won (a cut that repeats a file before it) nearly every
    /// anchor the base lacked was elsewhere; on timezone polygons, where 3.6-4.1% were,
    /// the trial (30 s of 60) gave not one byte less.
    var rulesOutCrossTrial: Bool { elsewhere * 10 < novel + elsewhere }

    /// What the publish log says of the estimate.
    var note: String {
        "cross-file trial \(rulesOutCrossTrial ? "skipped" : "run"): of \(anchors) anchors of the file, \(elsewhere) are only in the other files and \(novel) in none"
    }

    /// Anchors of `newPath` against `basePath` and `otherPaths`; `nil` when a file cannot be read.
    static func of(newPath: String, basePath: String, otherPaths: [String]) -> CrossFileEstimate? {
        guard let size = FileStatus.of(newPath)?.size else { return nil }
        let bits = anchorBits(forFileOf: size)
        guard let base = anchors(of: basePath, bits: bits) else { return nil }
        var others = Set<UInt64>()
        for path in otherPaths {
            guard let set = anchors(of: path, bits: bits) else { return nil }
            others.formUnion(set.subtracting(base))
        }
        guard let new = anchors(of: newPath, bits: bits) else { return nil }
        var estimate = CrossFileEstimate(anchors: new.count)
        for anchor in new {
            if base.contains(anchor) {
                estimate.inBase += 1
            } else if others.contains(anchor) {
                estimate.elsewhere += 1
            }
        }
        return estimate
    }

    /// How many of the distinct anchors of `newPath` are not in `basePath`, and how many it
    /// has; `nil` when a file cannot be read. Only the new file's anchors are kept (thinned
    /// by its size): the base is streamed past them, so memory does not grow with the base.
    static func novelAnchors(of newPath: String, against basePath: String) -> (novel: Int, anchors: Int)? {
        lacking(newPath, basePath).map { ($0.novel.count, $0.anchors) }
    }

    /// The distinct anchors of `newPath` that `basePath` lacks, how many it has, and the
    /// anchor bits for its size; `nil` when a file cannot be read. The base is streamed past.
    private static func lacking(_ newPath: String, _ basePath: String) -> (novel: Set<UInt64>, anchors: Int, bits: Int)? {
        guard let size = FileStatus.of(newPath)?.size else { return nil }
        let bits = anchorBits(forFileOf: size)
        guard var novel = anchors(of: newPath, bits: bits), let base = try? MappedFile.source(basePath, displayPath: basePath) else {
            return nil
        }
        let count = novel.count
        SegmentWindows.forEachAnchor(in: base.bytes, bits: bits) { key, _ in novel.remove(key) }
        return (novel, count, bits)
    }

    /// What each of `otherPaths` adds, in order, beside the base: the distinct anchors of
    /// `newPath` it holds that neither the base nor a path kept before it holds.
    /// `keeps(added, anchors)` decides each in turn (`anchors`: the new file's); a path left
    /// out adds nothing for the paths after it. `nil` when a file cannot be read. Only the
    /// new file's anchors are held; the base and the paths are streamed past them.
    static func additions(
        newPath: String, basePath: String, otherPaths: [String], keeps: (_ added: Int, _ anchors: Int) -> Bool
    ) -> (anchors: Int, added: [Int], kept: [Bool])? {
        guard let found = lacking(newPath, basePath) else { return nil }
        var lacking = found.novel
        let (count, bits) = (found.anchors, found.bits)
        var added: [Int] = []
        var kept: [Bool] = []
        for path in otherPaths {
            guard let file = try? MappedFile.source(path, displayPath: path) else { return nil }
            var found = Set<UInt64>()
            SegmentWindows.forEachAnchor(in: file.bytes, bits: bits) { key, _ in
                if lacking.contains(key) { found.insert(key) }
            }
            let keep = keeps(found.count, count)
            if keep { lacking.subtract(found) }
            added.append(found.count)
            kept.append(keep)
        }
        return (count, added, kept)
    }

    /// The distinct anchor values of the file at `path` (mapped, read once): the anchors
    /// segmented deltas place windows by (``SegmentWindows``), `bits` of the hash zero.
    static func anchors(of path: String, bits: Int) -> Set<UInt64>? {
        guard let file = try? MappedFile.source(path, displayPath: path) else { return nil }
        var set = Set<UInt64>()
        SegmentWindows.forEachAnchor(in: file.bytes, bits: bits) { key, _ in set.insert(key) }
        return set
    }

    /// Six bits (an anchor in about 128 bytes) up to 64 MiB, one bit more per doubling above.
    static func anchorBits(forFileOf size: Int64) -> Int {
        var bits = 6
        while bits < 30, size > Int64(1) << (bits + 20) { bits += 1 }
        return bits
    }
}
