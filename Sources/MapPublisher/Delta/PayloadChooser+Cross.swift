import Foundation
import MapDelta
import MapModel
import MapPlatform

/// The chooser's entry: a file's own smallest payload, then one that also reads other
/// files of the group (a cross-file delta) where that is smaller.
extension PayloadChooser {
    /// Files a cross-file delta may read before the base: the payload's header naming them
    /// (``CrossReferences/encoded``) and their paths, in the same order.
    package struct Cross {
        /// The encoded references (the base last).
        package var header: [UInt8]
        /// The referenced files' paths, the base last.
        package var paths: [String]

        /// The referenced files' bytes, which a client joins for every cross-file delta
        /// but the segmented one.
        var bytes: Int64 { paths.reduce(Int64(0)) { $0 + (FileStatus.of($1)?.size ?? 0) } }

        /// References `header` naming `paths`.
        package init(header: [UInt8], paths: [String]) {
            self.header = header
            self.paths = paths
        }
    }

    /// Which of a file's cross-file references (`paths`, the base last) its trials read:
    /// for a file over ``TrialPolicy/wholeFrameCrossLimit``, with estimates, each reference
    /// but the base is weighed in turn, the largest first, by the anchors of the file it adds
    /// to the base and the references kept before it, and left out where that is next to nothing
    /// (``TrialRule/redundantReference``): a frame's window and search then skip a copy of
    /// what another reference holds. Returns the indices of `paths` kept (none where only
    /// the base would be), and the publish log's note of those left out, by `names` (one
    /// per path: which version of which file).
    package func usefulReferences(newPath: String, newSize: Int64, paths: [String], names: [String]) -> (kept: [Int], note: PayloadNote?) {
        let all = Array(paths.indices)
        guard paths.count > 2, policy.holds(.redundantReference, TrialFacts(newSize: newSize, anchors: Int.max, addedAnchors: 0)),
            let base = paths.last
        else { return (all, nil) }
        let others = Array(paths.dropLast())
        // The largest first (ties in their order): a smaller file whose records a larger one
        // holds then adds next to nothing after it.
        let sizes = others.map { FileStatus.of($0)?.size ?? 0 }
        let order = others.indices.sorted { sizes[$0] != sizes[$1] ? sizes[$0] > sizes[$1] : $0 < $1 }
        let weighed = CrossFileEstimate.additions(newPath: newPath, basePath: base, otherPaths: order.map { others[$0] }) {
            added, anchors in
            !policy.holds(.redundantReference, TrialFacts(newSize: newSize, anchors: anchors, addedAnchors: added))
        }
        guard let weighed, weighed.kept.contains(false) else { return (all, nil) }
        var (keeps, adds) = (Array(repeating: true, count: others.count), Array(repeating: 0, count: others.count))
        for (place, index) in order.enumerated() { (keeps[index], adds[index]) = (weighed.kept[place], weighed.added[place]) }
        let kept = others.indices.filter { keeps[$0] }
        let leftOut = others.indices.filter { !keeps[$0] }.map {
            "\(names.indices.contains($0) ? names[$0] : others[$0]) (adds \(adds[$0]) of \(weighed.anchors) anchors)"
        }
        let note = PayloadNote(.trial, "cross-file references left out: \(leftOut.joined(separator: ", "))")
        return (kept.isEmpty ? [] : kept + [paths.count - 1], note)
    }

    /// The smallest payload for `newPath` (`newSize` bytes), optionally as a delta against
    /// `basePath`, or against `cross` (other files of the group, then the base) when that
    /// is smaller still.
    ///
    /// A file whose see-through payload won gets no cross-file trial: that trial diffs the
    /// compressed bytes, and the other files' compressed bytes share nothing with them that
    /// the base lacks (each stream's bytes depend on all that came before in it). On the
    /// gzip sample world's v1→v3 and v2→v3 patches it ran on 216 of 254 such files, won on
    /// none, and took 1.2 s of the 4.2 s their trials took. (A rule, not an estimate: the
    /// publish log does not repeat it for every file.)
    package func choose(newPath: String, newSize: Int64, basePath: String?, cross: Cross? = nil) throws -> Choice {
        if let cross, let basePath, policy.holds(.crossFrameFirst, TrialFacts(newSize: newSize)),
            wholeFrameFor(newSize) || !(lzma && LzmaEncoder.applies(newSize: newSize, prefix: Int(cross.bytes)))
        {
            return try chooseCrossFirst(newPath: newPath, newSize: newSize, basePath: basePath, cross: cross)
        }
        let choice = try chooseSingle(newPath: newPath, newSize: newSize, basePath: basePath)
        guard let cross, basePath != nil, crossTrialApplies(after: choice, newSize: newSize) else { return choice }
        if wholeFrameFor(newSize) {
            return try chooseLargeCross(newPath: newPath, newSize: newSize, cross: cross, single: choice)
        }
        return try chooseSmallCross(newPath: newPath, newSize: newSize, cross: cross, single: choice)
    }

    /// Whether a file of `newSize` bytes gets the large file's cross-file trials (one deep
    /// frame over its references, or segments in them), not a small file's frame.
    private func wholeFrameFor(_ newSize: Int64) -> Bool {
        newSize > TrialPolicy.wholeFrameCrossLimit || newSize > segmentThreshold
    }

    /// Whether a file whose own smallest payload is `choice` gets cross-file trials: not
    /// where an estimate ruled out its byte-level trials, nor where its see-through payload
    /// won (with estimates), nor for a payload of 64 bytes or less.
    private func crossTrialApplies(after choice: Choice, newSize: Int64) -> Bool {
        !choice.byteLevelRuledOut && (choice.encoding != .stored || newSize > 0) && choice.length > 64
            && !policy.holds(.noCrossAfterSeeThrough, TrialFacts(newSize: newSize, keptSeeThrough: choice.encoding.parts.view.seesThrough))
    }

    /// The payload of a file over ``TrialPolicy/deepAloneFrom`` where it has other files to
    /// read, with estimates. The anchors come first (``CrossFileEstimate``); where they
    /// leave the cross-file trial in, its frame over the references is made just before the
    /// file's own zstd delta, as a rival that can rule out that delta's deep search
    /// (``fastDeltaRulesOut(_:rival:rivalName:path:base:compressor:into:)``): the frame's
    /// prefix ends with the base, so a delta from the base alone seldom ends below it. A
    /// 30 MB gazetteer cut that repeats a smaller cut's records: the frame 293 kB in 45 s,
    /// the deep search of the file alone 578 kB in 42 s, which the fast delta now stands
    /// for. A large file's frame is one deep frame (``wholeCrossTrial(newPath:newSize:cross:in:placeTaken:)``),
    /// and where it cannot be made, the segmented cross-file delta; a file up to
    /// ``TrialPolicy/wholeFrameCrossLimit`` gets the small file's zstd frame
    /// (``crossFrame(_:newSize:cross:prefix:in:)``), the one it got after its own trials,
    /// where no LZMA2 trial applies to it (above ``TrialPolicy/deepAloneFrom`` none does:
    /// their limit is 4 MiB), so that the frame does not depend on which of its own
    /// payloads won.
    private func chooseCrossFirst(newPath: String, newSize: Int64, basePath: String, cross: Cross) throws -> Choice {
        let estimate = CrossFileEstimate.of(newPath: newPath, basePath: basePath, otherPaths: cross.paths.dropLast())
        var frame: Choice?
        var choice = try chooseSingle(newPath: newPath, newSize: newSize, basePath: basePath) { placeTaken in
            guard !(estimate?.rulesOutCrossTrial ?? false) else { return nil }
            var trial = Choice(encoding: .stored, payloadPath: newPath, length: .max, tried: [:])
            let made =
                wholeFrameFor(newSize)
                ? try wholeCrossTrial(newPath: newPath, newSize: newSize, cross: cross, in: &trial, placeTaken: placeTaken)
                : try smallCrossFrame(newPath: newPath, newSize: newSize, cross: cross, in: &trial)
            guard made else { return nil }
            frame = trial
            return (trial.length, estimate.flatMap { baseOnlyRuledOut(by: $0, frame: trial.length, newSize: newSize) })
        }
        guard crossTrialApplies(after: choice, newSize: newSize) || frame != nil else { return choice }
        if let estimate { choice.notes.append(PayloadNote(.trial, estimate.note)) }
        if estimate?.rulesOutCrossTrial ?? false { return choice }
        if let frame {
            choice.tried.merge(frame.tried) { _, made in made }
            choice.seconds.merge(frame.seconds, uniquingKeysWith: +)
            choice.scratch.merge(frame.scratch) { _, made in made }
            if frame.length < choice.length {
                (choice.encoding, choice.payloadPath, choice.length) = (frame.encoding, frame.payloadPath, frame.length)
                choice.notes.removeAll { !$0.logOnly }
                choice.crossHeader = frame.crossHeader
            }
            return choice
        }
        // No frame yet: the file's own trials ended before a zstd delta (a pair beyond
        // zstd's window), or the frame does not apply to it (then this fails at once).
        guard wholeFrameFor(newSize) else {
            _ = try smallCrossFrame(newPath: newPath, newSize: newSize, cross: cross, in: &choice)
            return choice
        }
        if try wholeCrossTrial(newPath: newPath, newSize: newSize, cross: cross, in: &choice) { return choice }
        try segmentedCrossTrial(newPath: newPath, cross: cross, in: &choice)
        return choice
    }

    /// The publish log's note saying why a large file's suffix-array delta from its base
    /// alone is not made, where the anchors of `estimate` show the base lacks far more that
    /// the other references hold than the cross-file frame (`frame` bytes) pays for; nil
    /// where it is made.
    private func baseOnlyRuledOut(by estimate: CrossFileEstimate, frame: Int64, newSize: Int64) -> String? {
        let facts = TrialFacts(newSize: newSize, anchors: estimate.anchors, rival: frame, addedAnchors: estimate.elsewhere)
        guard policy.holds(.baseLacksWhatTheFrameMatched, facts) else { return nil }
        let lacking = TrialPolicy.lacking(newSize, novel: estimate.elsewhere, of: estimate.anchors)
        return "the suffix-array delta from the base alone skipped: \(estimate.elsewhere) of \(estimate.anchors) anchors of the file are "
            + "only in the other files (about \(lacking) B the base lacks, against the frame's \(frame) B)"
    }

    /// The cross-file trials of a file up to ``TrialPolicy/wholeFrameCrossLimit`` beside `single`, its
    /// own smallest payload: one zstd frame (or LZMA2 stream) over its references joined.
    /// Above a small pair's size the anchors decide first, as for a large file: a 16.7 MB
    /// gazetteer cut spent 27.9 s on a frame over a larger cut and its own old version that
    /// came out 8% above its own delta.
    private func chooseSmallCross(newPath: String, newSize: Int64, cross: Cross, single: Choice) throws -> Choice {
        var choice = single
        if policy.holds(.crossEstimate, TrialFacts(newSize: newSize)), let basePath = cross.paths.last,
            let estimate = CrossFileEstimate.of(newPath: newPath, basePath: basePath, otherPaths: cross.paths.dropLast())
        {
            choice.notes.append(PayloadNote(.trial, estimate.note))
            if estimate.rulesOutCrossTrial { return choice }
        }
        return try withReferencesJoined(cross) { prefix in
            guard !prefix.isEmpty, ZstdDelta.windowLog(forContentSize: Int64(prefix.count) + newSize) != nil else { return choice }
            // The other files are tried in the codec whose delta of the file alone won, where
            // one of zstd and LZMA2 did: on the sample world's 85 cross-file trials the other
            // codec's never won (a header and a longer prefix add about the same to both).
            let lzmaApplies = lzma && LzmaEncoder.applies(newSize: newSize, prefix: prefix.count)
            let lzmaWon = choice.encoding == .lzmaDelta || choice.encoding == .lzma
            let zstdWon = choice.encoding == .delta
            if !(skipByEstimate && lzmaWon && lzmaApplies) {
                try crossFrame(newPath, newSize: newSize, cross: cross, prefix: prefix, in: &choice)
            }
            if lzmaApplies, !(skipByEstimate && zstdWon) {
                let stream = workDirectory + "/cross-lzma.frame"
                let (streamLength, seconds) = try Elapsed.measure {
                    try LzmaEncoder.encode(
                        path: newPath, size: newSize, prefix: prefix, preset: LzmaEncoder.preset(forLevel: level),
                        into: try SystemFile.createOrTruncate(stream))
                }
                let length = Int64(cross.header.count) + streamLength
                choice.record(.lzmaCrossDelta, length, seconds: seconds)
                if length < choice.length {
                    try keepCross(cross, frame: stream, length: length, as: .lzmaCrossDelta, in: &choice)
                }
            }
            return choice
        }
    }

    /// A small file's zstd frame over its references joined, made before its own zstd delta
    /// (``chooseCrossFirst(newPath:newSize:basePath:cross:)``): the frame of
    /// ``crossFrame(_:newSize:cross:prefix:in:)``, kept in `choice` where smaller. Returns
    /// whether it was made: not where zstd's window cannot cover the references and the file.
    private func smallCrossFrame(newPath: String, newSize: Int64, cross: Cross, in choice: inout Choice) throws -> Bool {
        try withReferencesJoined(cross) { prefix in
            guard !prefix.isEmpty, ZstdDelta.windowLog(forContentSize: Int64(prefix.count) + newSize) != nil else { return false }
            try crossFrame(newPath, newSize: newSize, cross: cross, prefix: prefix, in: &choice)
            return true
        }
    }

    /// A small file's cross-file delta (``PatchEncoding/crossDelta``): one zstd frame of
    /// `newPath` with the CLI's search over `prefix` (its references joined), its window over
    /// the references and the file; kept in `choice` where smaller.
    private func crossFrame(
        _ newPath: String, newSize: Int64, cross: Cross, prefix: UnsafeRawBufferPointer, in choice: inout Choice
    ) throws {
        let frame = workDirectory + "/cross.frame"
        let input = try SystemFile.openForReading(newPath)
        let (frameLength, seconds) = try Elapsed.measure {
            try compressor.encode(
                input, range: 0..<newSize, prefix: prefix, level: level,
                windowCover: Int64(prefix.count) + newSize,
                into: try SystemFile.createOrTruncate(frame)
            ).written
        }
        let length = Int64(cross.header.count) + frameLength
        choice.record(.crossDelta, length, seconds: seconds)
        if length < choice.length {
            try keepCross(cross, frame: frame, length: length, as: .crossDelta, in: &choice)
        }
    }

    /// A large file's cross-file trials beside `single`, its own smallest payload: one frame
    /// over its references joined (``wholeCrossTrial(newPath:newSize:cross:in:)``) and a
    /// segmented cross-file delta whose windows lie in the references, mapped.
    private func chooseLargeCross(newPath: String, newSize: Int64, cross: Cross, single: Choice) throws -> Choice {
        var choice = single
        // A whole-file encode of a large file (20-30 s, ~1 GB): skipped where the anchors
        // say the other files hold next to nothing the base lacks.
        if skipByEstimate, let basePath = cross.paths.last,
            let estimate = CrossFileEstimate.of(newPath: newPath, basePath: basePath, otherPaths: cross.paths.dropLast())
        {
            choice.notes.append(PayloadNote(.trial, estimate.note))
            if estimate.rulesOutCrossTrial { return choice }
        }
        // One frame reaches every byte the segments' windows hold, and finds what the
        // file repeats from a reference far from its own place: with estimates, the
        // segments are not made beside it (a rule, not a measurement).
        if try wholeCrossTrial(newPath: newPath, newSize: newSize, cross: cross, in: &choice), skipByEstimate {
            return choice
        }
        try segmentedCrossTrial(newPath: newPath, cross: cross, in: &choice)
        return choice
    }

    /// A segmented cross-file delta of the file at `newPath`, its windows in the references
    /// (mapped), kept where smaller than `choice`.
    private func segmentedCrossTrial(newPath: String, cross: Cross, in choice: inout Choice) throws {
        guard let segments else { return }
        let frame = workDirectory + "/cross-segmented.frame"
        Self.largeEncodes.take()
        defer { Self.largeEncodes.give() }
        let (frameLength, seconds) = try Elapsed.measure { try segments.encode(newPath: newPath, oldPaths: cross.paths, into: frame) }
        let length = Int64(cross.header.count) + frameLength
        choice.record(.segmentedCrossDelta, length, seconds: seconds)
        if length < choice.length {
            try keepCross(cross, frame: frame, length: length, as: .segmentedCrossDelta, in: &choice)
        }
    }

    /// One zstd frame of a large file against its references joined
    /// (``PatchEncoding/wholeCrossDelta``), at the deep search where the level has one, its
    /// window over the references and the file; kept where smaller than `choice`. Returns
    /// whether it was made: not beyond ``CrossReferences/maxWholeFileBytes`` or with references over
    /// ``CrossReferences/maxWholePrefixBytes``, nor where ``PatchOptions/wholeCrossFrame``
    /// is off. The segmented cross-file delta sees, for each segment, only windows of the
    /// references near its place, each in one of them; one frame reads every reference at
    /// once, so a file that interleaves records of two references (a gazetteer cut holding
    /// a smaller cut's records between its own) matches both. `placeTaken` is given the
    /// frame's place in ``largeEncodes`` once it holds it, to share with work beside it.
    func wholeCrossTrial(
        newPath: String, newSize: Int64, cross: Cross, in choice: inout Choice, placeTaken: (SharedPlace) -> Void = { _ in }
    ) throws -> Bool {
        let total = cross.bytes
        guard wholeCrossFrame, newSize <= CrossReferences.maxWholeFileBytes, total > 0, total <= CrossReferences.maxWholePrefixBytes,
            ZstdDelta.windowLog(forContentSize: total + newSize) != nil
        else { return false }
        return try withReferencesJoined(cross) { prefix in
            guard Int64(prefix.count) == total else { throw PatchBuildError.fileChanged(path: cross.paths.last ?? workDirectory) }
            let frame = workDirectory + "/cross-whole.frame"
            let place = SharedPlace()
            defer { place.leave() }
            placeTaken(place)
            // Its own context, freed once done (as for a large file's own delta).
            let deep = ZstdCompressor.deepSearchApplies(level: level, newSize: newSize, prefixSize: prefix.count)
            let (frameLength, seconds) = try Elapsed.measure {
                try ZstdCompressor().encode(
                    try SystemFile.openForReading(newPath), range: 0..<newSize, prefix: prefix, level: level,
                    search: deep ? .deep : .cli, windowCover: total + newSize, into: try SystemFile.createOrTruncate(frame)
                ).written
            }
            let length = Int64(cross.header.count) + frameLength
            choice.record(.wholeCrossDelta, length, seconds: seconds)
            if length < choice.length {
                try keepCross(cross, frame: frame, length: length, as: .wholeCrossDelta, in: &choice)
            }
            return true
        }
    }

    /// `body` given the files of `cross` joined one after another in the work folder
    /// (`cross.prefix`, mapped), which is emptied once it returns.
    private func withReferencesJoined<T>(_ cross: Cross, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        let joined = workDirectory + "/cross.prefix"
        defer { FileSystem.empty(joined) }
        let out = try SystemFile.createOrTruncate(joined)
        for path in cross.paths { try SystemFile.openForReading(path).forEachChunk { try out.writeAll($0) } }
        let prefix = try MappedFile.source(joined, displayPath: joined)
        return try withExtendedLifetime(prefix) { try body(prefix.bytes) }
    }

    /// Makes the references of `cross` followed by `frame` the chosen payload.
    func keepCross(_ cross: Cross, frame: String, length: Int64, as encoding: PatchEncoding, in choice: inout Choice) throws {
        let payload = workDirectory + "/cross.payload"
        let file = try SystemFile.createOrTruncate(payload)
        try cross.header.withUnsafeBytes { try file.writeAll($0) }
        try SystemFile.openForReading(frame).forEachChunk { try file.writeAll($0) }
        (choice.encoding, choice.payloadPath, choice.length, choice.notes) = (encoding, payload, length, [])
        choice.crossHeader = cross.header.count
        // The segmented form maps each reference; the others join them in a scratch file.
        if encoding != .segmentedCrossDelta { choice.scratch[encoding] = cross.bytes }
    }
}
