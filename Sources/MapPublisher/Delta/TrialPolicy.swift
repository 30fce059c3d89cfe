/// A rule that leaves trials out of a file's payload choice: its name, what it leaves
/// out, the measurement behind its number, and whether it rests on an estimate (which
/// ``PatchOptions/skipByEstimate`` turns off) or on sizes alone. ``TrialPolicy`` decides
/// each from measured facts; ``PayloadChooser`` measures and asks.
package enum TrialRule: String, Sendable, CaseIterable {
    /// The see-through delta is below 1/``TrialPolicy/seeThroughShare`` of the file.
    case seeThroughSuffices = "see-through delta suffices"
    /// Content-defined anchors say the compressed bytes hold over four times the
    /// see-through payload that the old version lacks.
    case compressedBytesAreNew = "compressed bytes are new"
    /// Both the file and its old version are at most ``TrialPolicy/smallPair``.
    case smallPair = "small pair"
    /// The file or its old version is over ``TrialPolicy/deepAloneFrom``.
    case deepSearchAlone = "deep search alone"
    /// Another codec's payload (a rival) is at most ``TrialPolicy/deepSkipPercent`` percent
    /// of a fast zstd delta.
    case rivalFarBelowFastDelta = "rival far below a fast delta"
    /// The CLI's zstd delta is over a fifth above another codec's payload.
    case variantsOutOfReach = "variants out of reach"
    /// The delta is below 1/``TrialPolicy/seeThroughShare`` of the file.
    case deltaFarBelowFile = "delta far below the file"
    /// Samples of the file put plain zstd over twice the delta.
    case plainZstdEstimate = "plain-zstd estimate"
    /// A file over ``TrialPolicy/deepAloneFrom`` with references gets its cross-file frame
    /// before its own zstd delta, or its segments above the segment threshold.
    case crossFrameFirst = "cross-file frame first"
    /// A file over ``TrialPolicy/smallPair`` with references gets the cross-file estimate.
    case crossEstimate = "cross-file estimate"
    /// A file whose see-through payload won gets no cross-file trial.
    case noCrossAfterSeeThrough = "no cross-file trial after a see-through delta"
    /// A cross-file reference of a file over ``TrialPolicy/wholeFrameCrossLimit`` adds under
    /// 1/``TrialPolicy/referenceShare`` of the file's anchors to the base and the references
    /// kept before it.
    case redundantReference = "a reference adds next to nothing"
    /// The content the base lacks and the other references hold (by anchors) is over
    /// ``TrialPolicy/seeThroughShare`` times the cross-file frame: a delta from the base
    /// alone pays for it.
    case baseLacksWhatTheFrameMatched = "the base lacks what the frame matched"

    /// What the rule leaves out, for a reader of the publish log.
    package var leavesOut: String {
        switch self {
        case .seeThroughSuffices, .compressedBytesAreNew: "the byte-level trials"
        case .smallPair: "the worker and deep zstd variants, and plain zstd beside a delta"
        case .deepSearchAlone: "every zstd variant but the deep search"
        case .rivalFarBelowFastDelta: "the deep zstd search (or the segments)"
        case .variantsOutOfReach: "the long-distance, worker and deep zstd variants"
        case .deltaFarBelowFile, .plainZstdEstimate: "plain zstd"
        case .crossFrameFirst: "the deep zstd search (or the segments), where the frame rules it out"
        case .crossEstimate: "the cross-file trial, where the anchors rule it out"
        case .noCrossAfterSeeThrough: "the cross-file trials"
        case .redundantReference: "a large file's cross-file reference that the base and the references before it nearly cover"
        case .baseLacksWhatTheFrameMatched: "the suffix-array delta from the base alone"
        }
    }

    /// The measurement the rule's number rests on.
    package var reason: String {
        switch self {
        case .seeThroughSuffices:
            "a byte-level delta of changed deflate streams pays for the changed compressed bytes, which a change spreads over most of a stream"
        case .compressedBytesAreNew:
            "of a 49 MB gzip file of timezone polygons all but 97 of 370,720 anchors were new; skipping its byte-level trials took its publish from 176 s to 45-52 s"
        case .smallPair:
            "on the sample world's 146 changed small files the deep search gave 19 B of 181.7 kB for a third of the patch time, and the worker variant and plain zstd nothing"
        case .deepSearchAlone:
            "a 16.7 MB gazetteer cut spent 45.8 s on four variants for the 336,323 B the deep search alone made in 20.5 s"
        case .rivalFarBelowFastDelta:
            "the publish-level delta ended at 59-86% of the fast one on the bench's files (a PNG's pixels 59%, timezone polygons 74%, a GeoJSON index 78%)"
        case .variantsOutOfReach:
            "the long-distance, worker and deep variants end at most a fifth below the CLI's delta (timezone polygons: the deep search 14% below at 58 MB)"
        case .deltaFarBelowFile:
            "without the old file plain zstd cannot end below a delta that small"
        case .plainZstdEstimate:
            "plain zstd of a whole file finds more repeats than samples do, but not twice as many on map data (timezone polygons: samples 47.5 MB, the file 37.7 MB, the delta 4.1 MB)"
        case .crossFrameFirst:
            "a 30 MB gazetteer cut: the frame 293 kB in 45 s; the deep search of the file alone 578 kB in 42 s, which the fast delta then stands for"
        case .crossEstimate:
            "a 16.7 MB gazetteer cut spent 27.9 s on a frame that came out 8% above its own delta"
        case .noCrossAfterSeeThrough:
            "on the gzip sample world the cross-file trial ran on 216 such files, won on none, and took 1.2 s of 4.2 s"
        case .baseLacksWhatTheFrameMatched:
            "timezone polygons with holes (60 MB): 51,891 of 364,174 anchors only in the new polygons (about 8.5 MB the base lacks) against a 55,735 B frame; the suffix-array delta from the base alone 2.74 MB in 21.2 s"
        case .redundantReference:
            "timezone polygons with holes (60 MB), read beside the new polygons, the old polygons (which added 0 of 364,174 anchors) and its own old version: the frame 58,322 B in 192.6 s; without the old polygons 55,735 B in 17.2 s"
        }
    }

    /// Whether the rule rests on an estimate (off with ``PatchOptions/skipByEstimate``)
    /// rather than on sizes alone.
    package var byEstimate: Bool { self != .deltaFarBelowFile }
}

/// What the chooser has measured of a file when it asks a rule: sizes, and the lengths of
/// the trials and estimates made so far (`nil`: not measured, and a rule that needs it
/// does not hold).
package struct TrialFacts: Sendable, Equatable {
    /// The new file's size.
    package var newSize: Int64
    /// Its old version's size (0 for none).
    package var oldSize: Int64 = 0
    /// The see-through payload's length, if one was made.
    package var seeThrough: Int64?
    /// Whether the see-through payload is the one kept so far.
    package var keptSeeThrough = false
    /// Content-defined anchors of the file (``CrossFileEstimate``)...
    package var anchors: Int?
    /// ...and how many of them its old version lacks.
    package var novelAnchors: Int?
    /// The length of a zstd delta of the file (the CLI's, or the one kept).
    package var delta: Int64?
    /// A payload of another codec (the suffix-array delta, LZMA2, a cross-file frame).
    package var rival: Int64?
    /// A fast (level ``PayloadChooser/fastLevel``) zstd delta of the file.
    package var fastDelta: Int64?
    /// Plain zstd of the file as its samples put it.
    package var plainZstdEstimate: Int64?
    /// The new file's anchors that cross-file references hold and the base (and, for one
    /// reference weighed, the references kept before it) does not.
    package var addedAnchors: Int?

    /// Facts of a file of `newSize` bytes against an old version of `oldSize`, with what
    /// else was measured.
    package init(
        newSize: Int64, oldSize: Int64 = 0, seeThrough: Int64? = nil, keptSeeThrough: Bool = false,
        anchors: Int? = nil, novelAnchors: Int? = nil, delta: Int64? = nil, rival: Int64? = nil, fastDelta: Int64? = nil,
        plainZstdEstimate: Int64? = nil, addedAnchors: Int? = nil
    ) {
        self.addedAnchors = addedAnchors
        self.newSize = newSize
        self.oldSize = oldSize
        self.seeThrough = seeThrough
        self.keptSeeThrough = keptSeeThrough
        self.anchors = anchors
        self.novelAnchors = novelAnchors
        self.delta = delta
        self.rival = rival
        self.fastDelta = fastDelta
        self.plainZstdEstimate = plainZstdEstimate
    }
}

/// Which trials run for a file: each ``TrialRule`` is a pure function of ``TrialFacts``,
/// its numbers here with the measurement behind them (``TrialRule/reason``).
package struct TrialPolicy: Sendable {
    /// Whether the rules that rest on estimates apply (``PatchOptions/skipByEstimate``).
    package var estimates: Bool

    /// The policy with estimates on or off.
    package init(estimates: Bool) { self.estimates = estimates }

    /// A file and old version both up to this size are a small pair.
    package static let smallPair: Int64 = 1 << 20
    /// A file or old version above this size gets the deep search alone (it was 16 MiB).
    package static let deepAloneFrom: Int64 = 8 << 20
    /// A payload below 1/this of its file is far below it.
    package static let seeThroughShare: Int64 = 64
    /// A rival at most this percentage of the fast delta rules out the deep search.
    package static let deepSkipPercent: Int64 = 55
    /// The fewest anchors of a file the anchors' estimate decides on (about 2 kB of content).
    package static let byteLevelEstimateAnchors = 16
    /// Files up to this size get a cross-file delta as one zstd frame over the references
    /// joined, larger ones a segmented one whose windows lie in the references (mapped);
    /// with estimates, one above ``deepAloneFrom`` gets its frame first (``TrialRule/crossFrameFirst``).
    package static let wholeFrameCrossLimit: Int64 = 16 << 20

    /// A large file's cross-file reference is left out where it adds fewer than 1/this of
    /// the file's anchors (``TrialRule/redundantReference``).
    package static let referenceShare = 1024
    /// Samples of a large file zstd compresses to estimate plain zstd of all of it.
    package static let estimateSamples = 4
    package static let estimateSampleLength = 1 << 20
    /// Files above this size get the plain-zstd estimate: twice the samples, so that the
    /// estimate costs at most half the encode it can save (it was 16 MiB; a 16.7 MB cut
    /// spent 15.3 s on 2.77 MB of plain zstd beside a 336 kB delta).
    package static let plainZstdEstimateFrom = Int64(2 * estimateSamples * estimateSampleLength)

    /// How far below the CLI's delta of `length` bytes its other variants can end: a fifth.
    package static func variantReach(_ length: Int64) -> Int64 { length / 5 }

    /// Whether `rule` holds for `facts` (and so leaves out what it names).
    package func holds(_ rule: TrialRule, _ facts: TrialFacts) -> Bool {
        guard estimates || !rule.byEstimate else { return false }
        switch rule {
        case .seeThroughSuffices:
            guard facts.keptSeeThrough, let seeThrough = facts.seeThrough else { return false }
            return seeThrough * Self.seeThroughShare < facts.newSize
        case .compressedBytesAreNew:
            guard facts.keptSeeThrough, let seeThrough = facts.seeThrough, let anchors = facts.anchors,
                let novel = facts.novelAnchors, anchors >= Self.byteLevelEstimateAnchors
            else { return false }
            return Self.lacking(facts.newSize, novel: novel, of: anchors) > 4 * seeThrough
        case .smallPair:
            return facts.newSize <= Self.smallPair && facts.oldSize <= Self.smallPair
        case .deepSearchAlone:
            return facts.newSize > Self.deepAloneFrom || facts.oldSize > Self.deepAloneFrom
        case .rivalFarBelowFastDelta:
            guard let rival = facts.rival, let fast = facts.fastDelta else { return false }
            return rival * 100 <= fast * Self.deepSkipPercent
        case .variantsOutOfReach:
            guard let rival = facts.rival, let delta = facts.delta else { return false }
            return delta > rival + Self.variantReach(delta)
        case .deltaFarBelowFile:
            guard let delta = facts.delta else { return false }
            return delta * Self.seeThroughShare <= facts.newSize
        case .plainZstdEstimate:
            guard facts.newSize > Self.plainZstdEstimateFrom, let delta = facts.delta, let estimate = facts.plainZstdEstimate else {
                return false
            }
            return delta * 2 < estimate
        case .crossFrameFirst:
            return facts.newSize > Self.deepAloneFrom
        case .crossEstimate:
            return facts.newSize > Self.smallPair
        case .noCrossAfterSeeThrough:
            return facts.keptSeeThrough
        case .baseLacksWhatTheFrameMatched:
            guard let frame = facts.rival, let added = facts.addedAnchors, let anchors = facts.anchors,
                anchors >= Self.byteLevelEstimateAnchors
            else { return false }
            return Self.lacking(facts.newSize, novel: added, of: anchors) > Self.seeThroughShare * frame
        case .redundantReference:
            guard facts.newSize > Self.wholeFrameCrossLimit, let added = facts.addedAnchors, let anchors = facts.anchors,
                anchors >= Self.byteLevelEstimateAnchors
            else { return false }
            return added * Self.referenceShare < anchors
        }
    }

    /// The bytes of a `newSize`-byte file its old version lacks, by its anchors: `novel` of `anchors`.
    package static func lacking(_ newSize: Int64, novel: Int, of anchors: Int) -> Int64 {
        anchors > 0 ? newSize * Int64(novel) / Int64(anchors) : newSize
    }
}
