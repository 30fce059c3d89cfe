import Foundation
import MapDelta
import MapModel
import MapPlatform

/// Encodes one new file the ways that apply (delta against a base, plain zstd, stored)
/// and keeps the smallest; ties go to the simpler encoding (stored, then zstd).
///
/// Plain zstd is not tried when the delta is already below 1/64 of the file: without the
/// old file zstd cannot get near such a ratio on data the old file explains, and on large
/// files the extra pass costs as much as the delta itself (63 of 149 s on a 61 MB file).
package struct PayloadChooser {
    /// The winning payload.
    package struct Choice {
        /// Its encoding.
        package var encoding: PatchEncoding
        /// The file holding the payload bytes (the new file itself when stored).
        package var payloadPath: String
        /// Its length.
        package var length: Int64
        /// Every encoding tried and its size.
        package var tried: [PatchEncoding: Int64]
        /// Why a delta was not used although a base was offered, if so.
        package var note: String?
        /// Whether an estimate ruled out deltas of the file's bytes as they are, the
        /// cross-file trial with them (``byteLevelRulesOut(_:newPath:newSize:basePath:)``).
        var byteLevelRuledOut = false
    }

    /// Admits one whole-file delta encode of a large file at a time (see `encodeDelta`;
    /// a segmented cross-file delta and a suffix-array delta too): the publisher's peak
    /// memory is one such encoder whatever the number of jobs.
    private static let largeEncodes = DispatchSemaphore(value: 1)

    /// A delta below this fraction of the new file skips the plain-zstd trial.
    static let plainZstdSkipRatio: Int64 = 64

    /// The context every trial encodes with.
    let compressor: ZstdCompressor
    /// The zstd level.
    let level: Int
    /// Where trial payloads are written (`zstd.payload`, `delta.payload`, `delta-ldm.payload`).
    let workDirectory: String

    /// The encoder of files above `segmentThreshold`.
    let segments: SegmentedEncoder?
    /// Files larger than this get a segmented delta only.
    let segmentThreshold: Int64
    /// Whether encodings an estimate says cannot win are skipped (``PatchOptions/skipByEstimate``).
    let skipByEstimate: Bool
    /// The largest file (or expansion) above `segmentThreshold` that also gets a
    /// whole-file suffix-array trial (``PatchOptions/wholeFileSuffix``); 0 for none.
    let wholeFileSuffixLimit: Int64
    /// The same for a raw file (``PatchOptions/wholeRawFileSuffix``); 0 for none.
    let wholeRawFileSuffixLimit: Int64
    /// Whether an expansion above `segmentThreshold` also gets one zstd frame of the whole
    /// expansion (``PatchOptions/wholeExpansionFrame``).
    let wholeExpansionFrame: Bool
    /// Whether LZMA2 payloads are tried (``PatchOptions/lzma``).
    let lzma: Bool

    /// A chooser encoding at `level` into files in `workDirectory`; files larger than
    /// `segmentThreshold` are cut into `segments`.
    package init(
        compressor: ZstdCompressor, level: Int, workDirectory: String, segments: SegmentedEncoder? = nil,
        segmentThreshold: Int64 = .max, skipByEstimate: Bool = true, wholeFileSuffix: Bool = false,
        wholeRawFileSuffix: Bool = false, wholeExpansionFrame: Bool = false,
        lzma: Bool = PatchCodecs.available.contains(PatchCodecs.lzma)
    ) {
        self.lzma = lzma
        self.wholeExpansionFrame = wholeExpansionFrame
        wholeRawFileSuffixLimit = wholeRawFileSuffix ? SuffixEncoder.maxWholeFileSize : 0
        self.skipByEstimate = skipByEstimate
        wholeFileSuffixLimit = wholeFileSuffix ? SuffixEncoder.maxWholeFileSize : 0
        self.compressor = compressor
        self.level = level
        self.workDirectory = workDirectory
        self.segments = segments
        self.segmentThreshold = segmentThreshold
    }

    /// A chooser with every setting of `options`, its trial files in `workDirectory`.
    package init(options: PatchOptions, workDirectory: String) throws {
        self.init(
            compressor: try ZstdCompressor(), level: options.level, workDirectory: workDirectory,
            segments: SegmentedEncoder(
                segmentLength: options.segmentLength, margin: options.segmentMargin, level: options.level,
                jobs: options.segmentJobs, workDirectory: workDirectory),
            segmentThreshold: options.segmentThreshold, skipByEstimate: options.skipByEstimate,
            wholeFileSuffix: options.wholeFileSuffix, wholeRawFileSuffix: options.wholeRawFileSuffix,
            wholeExpansionFrame: options.wholeExpansionFrame,
            lzma: options.lzma && PatchCodecs.available.contains(PatchCodecs.lzma))
    }

    /// For a file above the threshold: a segmented delta, or a see-through delta (its
    /// expansion segmented, or one frame or a suffix delta up to 256 MiB) when smaller, else
    /// the file stored. Segments are encoding passes of bounded memory; the whole-file
    /// trials beside them take memory growing with the file up to their limits.
    private func chooseSegmented(
        newPath: String, newSize: Int64, basePath: String,
        encoder: SegmentedEncoder
    ) throws -> Choice {
        var choice = Choice(encoding: .stored, payloadPath: newPath, length: newSize, tried: [.stored: newSize])
        guard (FileStatus.of(basePath)?.size ?? 0) > 0 else {
            choice.note = "no delta: old file is empty"
            return choice
        }
        try trySeeThrough(newPath, basePath: basePath, into: &choice)
        if seeThroughSuffices(&choice, newSize: newSize) { return choice }
        if byteLevelRulesOut(&choice, newPath: newPath, newSize: newSize, basePath: basePath) { return choice }
        let path = workDirectory + "/segmented.payload"
        let length = try encoder.encode(newPath: newPath, oldPath: basePath, into: path)
        choice.tried[.segmentedDelta] = length
        if length < choice.length {
            (choice.encoding, choice.payloadPath, choice.length) = (.segmentedDelta, path, length)
        } else {
            choice.note = [choice.note, "segmented delta (\(length) B) not smaller than \(choice.encoding) (\(choice.length) B)"]
                .compactMap { $0 }.joined(separator: "; ")
        }
        // The suffix-array delta of the whole file: its decoder holds three stream decoders
        // and the mapped old file whatever the size, so it needs no segments; its matches
        // reach the whole old file, and an edit costs its own bytes and a step, not the
        // bytes until zstd's long-distance matcher finds the next match.
        if let suffix = try suffixDelta(newPath, newSize: newSize, basePath: basePath, limit: wholeRawFileSuffixLimit) {
            choice.tried[suffix.encoding] = suffix.length
            if suffix.length < choice.length {
                (choice.encoding, choice.payloadPath, choice.length, choice.note) = (
                    suffix.encoding, suffix.path, suffix.length, choice.note.flatMap(Self.onceADeltaWon)
                )
            }
        }
        return choice
    }

    /// Files a cross-file delta may read before the base: the payload's header naming them
    /// (``CrossReferences/encoded``) and their paths, in the same order.
    package struct Cross {
        /// The encoded references (the base last).
        package var header: [UInt8]
        /// The referenced files' paths, the base last.
        package var paths: [String]

        /// References `header` naming `paths`.
        package init(header: [UInt8], paths: [String]) {
            self.header = header
            self.paths = paths
        }
    }

    /// Files up to this size get a cross-file delta as one zstd frame over the references
    /// joined; larger ones a segmented one whose windows lie in the references (mapped).
    static let wholeFrameCrossLimit: Int64 = 16 << 20

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
        var choice = try chooseSingle(newPath: newPath, newSize: newSize, basePath: basePath)
        guard let cross, basePath != nil, !choice.byteLevelRuledOut, choice.encoding != .stored || newSize > 0, choice.length > 64,
            !(skipByEstimate && choice.encoding.seeThrough != nil)
        else { return choice }
        if newSize > Self.wholeFrameCrossLimit || newSize > segmentThreshold {
            guard let segments else { return choice }
            // A whole-file encode of a large file (20-30 s, ~1 GB): skipped where the anchors
            // say the other files hold next to nothing the base lacks.
            if skipByEstimate, let basePath = cross.paths.last,
                let estimate = CrossFileEstimate.of(newPath: newPath, basePath: basePath, otherPaths: cross.paths.dropLast())
            {
                choice.note = [choice.note, estimate.note].compactMap { $0 }.joined(separator: "; ")
                if estimate.rulesOutCrossTrial { return choice }
            }
            let frame = workDirectory + "/cross-segmented.frame"
            Self.largeEncodes.wait()
            defer { Self.largeEncodes.signal() }
            let length = Int64(cross.header.count) + (try segments.encode(newPath: newPath, oldPaths: cross.paths, into: frame))
            choice.tried[.segmentedCrossDelta] = length
            if length < choice.length {
                try keepCross(header: cross.header, frame: frame, length: length, as: .segmentedCrossDelta, in: &choice)
            }
            return choice
        }
        let joined = workDirectory + "/cross.prefix"
        defer { FileSystem.empty(joined) }
        let out = try SystemFile.createOrTruncate(joined)
        for path in cross.paths { try SystemFile.openForReading(path).forEachChunk { try out.writeAll($0) } }
        let prefix = try MappedFile.source(joined, displayPath: joined)
        guard !prefix.bytes.isEmpty, ZstdDelta.windowLog(forContentSize: Int64(prefix.bytes.count) + newSize) != nil else {
            return choice
        }
        // The other files are tried in the codec whose delta of the file alone won, where
        // one of zstd and LZMA2 did: on the sample world's 85 cross-file trials the other
        // codec's never won (a header and a longer prefix add about the same to both).
        let lzmaApplies = lzma && LzmaEncoder.applies(newSize: newSize, prefix: prefix.bytes.count)
        let lzmaWon = choice.encoding == .lzmaDelta || choice.encoding == .lzma
        let zstdWon = choice.encoding == .delta
        if !(skipByEstimate && lzmaWon && lzmaApplies) {
            let frame = workDirectory + "/cross.frame"
            let input = try SystemFile.openForReading(newPath)
            let frameLength = try compressor.encode(
                input, range: 0..<newSize, prefix: prefix.bytes, level: level,
                windowCover: Int64(prefix.bytes.count) + newSize,
                into: try SystemFile.createOrTruncate(frame)
            ).written
            let length = Int64(cross.header.count) + frameLength
            choice.tried[.crossDelta] = length
            if length < choice.length {
                try keepCross(header: cross.header, frame: frame, length: length, as: .crossDelta, in: &choice)
            }
        }
        if lzmaApplies, !(skipByEstimate && zstdWon) {
            let stream = workDirectory + "/cross-lzma.frame"
            let length =
                Int64(cross.header.count)
                + (try LzmaEncoder.encode(
                    path: newPath, size: newSize, prefix: prefix.bytes, preset: LzmaEncoder.preset(forLevel: level),
                    into: try SystemFile.createOrTruncate(stream)))
            choice.tried[.lzmaCrossDelta] = length
            if length < choice.length {
                try keepCross(header: cross.header, frame: stream, length: length, as: .lzmaCrossDelta, in: &choice)
            }
        }
        return choice
    }

    /// Makes the references `header` followed by `frame` the chosen payload.
    private func keepCross(header: [UInt8], frame: String, length: Int64, as encoding: PatchEncoding, in choice: inout Choice) throws {
        let payload = workDirectory + "/cross.payload"
        let file = try SystemFile.createOrTruncate(payload)
        try header.withUnsafeBytes { try file.writeAll($0) }
        try SystemFile.openForReading(frame).forEachChunk { try file.writeAll($0) }
        (choice.encoding, choice.payloadPath, choice.length, choice.note) = (encoding, payload, length, nil)
    }

    /// The smallest payload from this file and its base alone.
    private func chooseSingle(newPath: String, newSize: Int64, basePath: String?) throws -> Choice {
        if let basePath, let segments, newSize > segmentThreshold {
            return try chooseSegmented(newPath: newPath, newSize: newSize, basePath: basePath, encoder: segments)
        }
        var choice = Choice(encoding: .stored, payloadPath: newPath, length: newSize, tried: [.stored: newSize])
        guard newSize > 0 else { return choice }
        try trySeeThrough(newPath, basePath: basePath, into: &choice)
        if seeThroughSuffices(&choice, newSize: newSize) { return choice }
        if let basePath, byteLevelRulesOut(&choice, newPath: newPath, newSize: newSize, basePath: basePath) { return choice }
        var delta: (path: String, length: Int64, note: String?)?
        // The suffix-array delta comes first: where a large file's is far below a fast zstd
        // delta, the deep zstd search (a whole-file encode of 15-20 s) is not run.
        let suffix = try basePath.flatMap { try suffixDelta(newPath, newSize: newSize, basePath: $0) }
        let base = try basePath.map { try MappedFile.source($0, displayPath: $0) }
        // The LZMA2 payload is made before the zstd deltas (and weighed after them, as
        // before): where it is well below the first, the second is not run.
        let lzma = try lzmaPayload(newPath, newSize: newSize, base: base?.bytes)
        if let base {
            if let reason = ZstdDelta.deltaLimitReason(oldSize: Int64(base.bytes.count), newSize: newSize) {
                choice.note = "no delta: \(reason)"
            } else {
                delta = try encodeDelta(newPath, newSize: newSize, base: base.bytes, rival: suffix?.length, lzma: lzma?.length)
                choice.tried[.delta] = delta!.length
                if let note = delta!.note { choice.note = [choice.note, note].compactMap { $0 }.joined(separator: "; ") }
            }
        }
        // Beside a small pair's delta plain zstd is not tried: without the old file it found
        // no more than the delta on the sample world's 146 small files. (A rule of size, not
        // an estimate: the publish log does not repeat it for every small file.)
        let worthZstd =
            delta.map {
                $0.length * Self.plainZstdSkipRatio > newSize && !isSmallPair(newSize: newSize, oldSize: base?.bytes.count ?? 0)
            } ?? true
        if worthZstd, let delta, let estimate = plainZstdRulesOut(delta.length, path: newPath, newSize: newSize) {
            choice.note = [choice.note, estimate].compactMap { $0 }.joined(separator: "; ")
        } else if worthZstd {
            let zstdPath = workDirectory + "/zstd.payload"
            let length = try encode(newPath, prefix: nil, into: zstdPath)
            choice.tried[.zstd] = length
            if length < choice.length {
                (choice.encoding, choice.payloadPath, choice.length) = (.zstd, zstdPath, length)
            }
        }
        if let delta {
            if delta.length < choice.length {
                (choice.encoding, choice.payloadPath, choice.length) = (.delta, delta.path, delta.length)
            } else {
                choice.note = [choice.note, "delta (\(delta.length) B) not smaller than \(choice.encoding) (\(choice.length) B)"]
                    .compactMap { $0 }.joined(separator: "; ")
            }
        }
        // The suffix-array codec wins where numbers shifted by small amounts (coordinates,
        // ids): its byte differences repeat, which zstd's matching alone does not see; and
        // where new numbers fill fixed-width fields, which its filter sends as differences
        // (timezone polygons, 58 MB: 2.9 MB against the deep zstd delta's 4.1 MB).
        if let suffix {
            choice.tried[suffix.encoding] = suffix.length
            if suffix.length < choice.length {
                (choice.encoding, choice.payloadPath, choice.length, choice.note) = (
                    suffix.encoding, suffix.path, suffix.length, choice.note.flatMap(Self.onceADeltaWon)
                )
            }
        }
        if let lzma {
            choice.tried[lzma.encoding] = lzma.length
            if lzma.length < choice.length {
                (choice.encoding, choice.payloadPath, choice.length, choice.note) = (
                    lzma.encoding, lzma.path, lzma.length, choice.note.flatMap(Self.onceADeltaWon)
                )
            }
        }
        return choice
    }

    /// The LZMA2 payload of a small file (``LzmaEncoder``), against its old file where it
    /// has one; nil where the trial does not apply. It wins on binary data of many small
    /// numbers (map tiles, tables), where zstd's entropy stages code whole symbols.
    private func lzmaPayload(
        _ newPath: String, newSize: Int64, base: UnsafeRawBufferPointer?
    ) throws -> (path: String, length: Int64, encoding: PatchEncoding)? {
        let prefix = base.flatMap { $0.isEmpty ? nil : $0 }
        guard lzma, LzmaEncoder.applies(newSize: newSize, prefix: prefix?.count ?? 0) else { return nil }
        let path = workDirectory + "/lzma.payload"
        let length = try LzmaEncoder.encode(
            path: newPath, size: newSize, prefix: prefix, preset: LzmaEncoder.preset(forLevel: level), into: try SystemFile.createOrTruncate(path))
        return (path, length, prefix == nil ? .lzma : .lzmaDelta)
    }

    /// The parts of a note that only the publish log shows (which trials a rule or an
    /// estimate left out): a client has nothing to act on in them.
    static let logOnlyPrefixes = [
        "byte-level trials skipped", "plain zstd not tried", "delta: the ", "delta (",
        "cross-file trial",
    ]

    /// `note` once a delta of another codec won (suffix array, LZMA2): why no delta was
    /// used no longer applies; what the estimates decided and why the file is not seen
    /// through still do. Nil when nothing is left.
    static func onceADeltaWon(_ note: String) -> String? {
        let parts = note.components(separatedBy: "; ").filter { !$0.hasPrefix("no delta") }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }

    /// `note` without its log-only parts (``logOnlyPrefixes``), for the patch edge.
    static func withoutLogOnlyParts(_ note: String) -> String {
        note.components(separatedBy: "; ").filter { part in !logOnlyPrefixes.contains { part.hasPrefix($0) } }.joined(separator: "; ")
    }

    /// A fast zstd delta of `path` against `base` (level ``fastLevel``, long-distance
    /// matching) in `file`, with the note for the publish log, where `rival` (the
    /// suffix-array delta) is at most ``deepSkipPercent`` percent of it: the publish-level
    /// search (`search`, named in the note) is then not run, as it cannot end that far below
    /// the fast delta on map data. Nil, and the fast delta wasted, where the rival is larger.
    func fastDeltaRulesOut(
        _ search: String, rival: Int64, path: String, base: UnsafeRawBufferPointer, compressor: ZstdCompressor,
        into file: String
    ) throws -> (length: Int64, note: String)? {
        let fast = try compressor.encode(
            path: path, prefix: base, level: Self.fastLevel, longDistanceMatching: true, search: .cli,
            into: try SystemFile.createOrTruncate(file))
        guard rival * 100 <= fast * Self.deepSkipPercent else { return nil }
        return (
            fast,
            "delta: \(search) skipped: the suffix-array delta (\(rival) B) is below \(Self.deepSkipPercent)% of a level-\(Self.fastLevel) delta (\(fast) B)"
        )
    }

    /// The level of the fast delta that can rule out the deep search (``encodeDelta(_:newSize:base:rival:lzma:)``).
    static let fastLevel = 3
    /// A rival payload at most this percentage of the fast delta rules out the deep search
    /// (and the level-19 delta of a see-through expansion). The publish-level delta ended
    /// at 59-86% of the fast one on the bench's files (a PNG's pixels: 59%, timezone
    /// polygons: 74%, a GeoJSON index: 78%).
    static let deepSkipPercent: Int64 = 55

    /// What the publish log says of a large file's delta (``encodeDelta(_:newSize:base:rival:lzma:)``).
    static let deepOnlyNote = "delta: the deep search alone (the file or its old version is over 16 MiB)"

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
    private func isSmallPair(newSize: Int64, oldSize: Int) -> Bool {
        skipByEstimate && newSize <= Self.smallPair && Int64(oldSize) <= Self.smallPair
    }

    /// Files above this size are large: one whole-file encode costs seconds per trial.
    static let largeFile: Int64 = 16 << 20

    /// Samples of a large file zstd compresses to estimate plain zstd of all of it.
    static let estimateSamples = 4
    static let estimateSampleLength = 1 << 20

    /// For a large file whose delta is `deltaLength`: a note saying why plain zstd (a
    /// whole-file encode without the old file) is not tried, when samples of the file
    /// compressed at the same level put it above twice the delta; `nil` when it is tried.
    /// Plain zstd of the whole file finds more repeats than the samples do, but not twice
    /// as many on map data (on timezone polygons, 58 MB, the samples said 47.5 MB, the
    /// whole file gave 37.7 MB, against a 4.1 MB delta).
    private func plainZstdRulesOut(_ deltaLength: Int64, path: String, newSize: Int64) -> String? {
        guard skipByEstimate, newSize > Self.largeFile, let file = try? MappedFile.source(path, displayPath: path) else { return nil }
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
    private func seeThroughSuffices(_ choice: inout Choice, newSize: Int64) -> Bool {
        guard skipByEstimate, choice.encoding.seeThrough != nil, choice.length * Self.plainZstdSkipRatio < newSize else {
            return false
        }
        choice.note = [choice.note, "byte-level trials skipped: the see-through delta is below 1/64 of the file"]
            .compactMap { $0 }.joined(separator: "; ")
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
    private func byteLevelRulesOut(_ choice: inout Choice, newPath: String, newSize: Int64, basePath: String) -> Bool {
        guard skipByEstimate, choice.encoding.seeThrough != nil,
            let (novel, anchors) = CrossFileEstimate.novelAnchors(of: newPath, against: basePath),
            anchors >= Self.byteLevelEstimateAnchors
        else { return false }
        let lacking = newSize * Int64(novel) / Int64(anchors)
        guard lacking > 4 * choice.length else { return false }
        choice.byteLevelRuledOut = true
        choice.note = [
            choice.note,
            "byte-level trials skipped: \(novel) of \(anchors) anchors of the file are not in its old version "
                + "(about \(lacking) B to send against the see-through delta's \(choice.length) B)",
        ].compactMap { $0 }.joined(separator: "; ")
        return true
    }

    /// Tries a see-through payload for `newPath` and keeps it in `choice` when smaller.
    /// With a base, the new expansion is diffed against the old one; a new file is sent
    /// as its expansion compressed plus the recipe, when that is smaller than zstd of
    /// the compressed bytes. An expansion above the segment threshold is segmented.
    /// A file of no known container is scanned for gzip and zlib streams at any offset
    /// (tile archives); its patch then says so, so the client scans its old file too.
    /// An SQLite database (MBTiles) is gathered first: its tiles cut over overflow pages
    /// become whole streams.
    private func trySeeThrough(_ newPath: String, basePath: String?, into choice: inout Choice) throws {
        var streams = DeflateStreams.find(in: newPath)
        var scanned = false
        if streams.isEmpty, let basePath, let gathered = try gatheredSeeThrough(newPath, basePath: basePath) {
            take(gathered, scanned: true, gathered: true, into: &choice)
            return
        }
        if streams.isEmpty {
            streams = DeflateStreams.scan(in: newPath)
            scanned = basePath != nil
        }
        guard !streams.isEmpty else { return }
        take(
            try seeThrough(newPath, streams: streams, basePath: basePath, scanned: scanned), scanned: scanned, gathered: false,
            into: &choice)
    }

    /// The smallest of several deltas (all read by the same decoder, each deterministic):
    /// the CLI's parameters on this thread (``ZstdCompressor/DeltaSearch/cli``), through
    /// one worker thread as the CLI runs them (`cliWorker`), and at optimal-parser levels
    /// with a chain table spanning the whole window (`deep`). Where the CLI's rule leaves
    /// long-distance matching off (files up to the level's chain reach, a few MB, so cheap
    /// to encode again) the CLI delta with it on is tried too. Which one wins depends on
    /// the data: on timezone polygons (58 MB) `deep` is 14% below the CLI's -19 and level
    /// 22; at levels 1–18 the worker variant was 8–17% larger on other data. Costs one
    /// encode per variant (~70 s instead of ~20 s for a 58 MB file at level 19).
    ///
    /// Above 16 MiB (an encoder of ~1.4 GB at 58 MB, more for a larger window: the publish
    /// of a 187 MB expansion peaked at 3.2 GB) one such encode runs at a time in the
    /// process, whatever the number of publish jobs.
    ///
    /// `rival`, the length of a payload of another codec already made for a large file (its
    /// suffix-array delta): where it is below ``deepSkipPercent`` percent of a fast zstd delta
    /// (level 3, long-distance matching: ~0.3 s for 55 MB), the deep search is not run and
    /// the fast delta stands for zstd. The deep search ends 20-30% below the fast one on map
    /// data (timezone polygons: 4.08 MB against 5.49 MB), so it cannot reach a rival that far
    /// below; the suffix-array delta there is 2.9 MB, 53% of the fast one.
    func encodeDelta(
        _ path: String, newSize: Int64, base: UnsafeRawBufferPointer, rival: Int64? = nil, lzma: Int64? = nil
    ) throws -> (path: String, length: Int64, note: String?) {
        let large = newSize > 16 << 20 || base.count > 16 << 20
        if large { Self.largeEncodes.wait() }
        defer { if large { Self.largeEncodes.signal() } }
        // A large encode's context (~1.4 GB with its worker) is freed once it is done, not
        // kept for the next file: the suffix-array trial after it needs its own memory.
        let compressor = large ? try ZstdCompressor() : self.compressor
        var best: (path: String, length: Int64)?
        func trial(
            _ name: String, search: ZstdCompressor.DeltaSearch, longDistanceMatching: Bool? = nil,
            optional: Bool
        ) throws {
            let file = workDirectory + "/\(name).payload"
            let length: Int64
            do {
                length = try compressor.encode(
                    path: path, prefix: base, level: level, longDistanceMatching: longDistanceMatching, search: search,
                    into: try SystemFile.createOrTruncate(file))
            } catch PatchBuildError.codec(_, _) where optional {
                return  // e.g. a zstd without threads refuses ZSTD_c_nbWorkers: keep the other variants
            }
            if best.map({ length < $0.length }) ?? true { best = (file, length) }
        }
        // A large file at a level where the deep search applies gets that one only: on map
        // data it was the smallest and the fastest (timezone polygons, 55 MB at level 19:
        // 4.08 MB in 15 s, against 4.76 MB in 18 s with the CLI's parameters and 4.60 MB
        // in 19 s through a worker), and each trial is a whole-file encode.
        if large, skipByEstimate, ZstdCompressor.deepSearchApplies(level: level, newSize: newSize, prefixSize: base.count) {
            let file = workDirectory + "/delta-fast.payload"
            if let rival,
                let fast = try fastDeltaRulesOut(
                    "the deep search", rival: rival, path: path, base: base, compressor: compressor, into: file)
            {
                return (file, fast.length, fast.note)
            }
            try trial("delta-deep", search: .deep, optional: true)
            if let best { return (best.path, best.length, Self.deepOnlyNote) }
        }
        // The long-distance, worker and deep variants of a larger pair run only where the
        // CLI's delta is within a fifth (``variantReach(_:)``) of the best payload of another
        // codec (the suffix-array and LZMA2 ones, `rival` and `lzma`): beyond it they cannot
        // win. A small pair gets neither the worker variant (it fits one worker job; the
        // variant gave no byte less than the others on any of the sample world's 476 small
        // files) nor the deep search (4x the CLI's time per file, a third of the sample
        // world's patch time, for 1-5 B on 10 of its 146 changed files: 19 B of 181.7 kB),
        // and its long-distance one only where the CLI's delta is ahead of the other codecs':
        // the 3 files of 318 within reach where it saved bytes (1-6 B) were all such.
        try trial("delta", search: .cli, optional: false)
        let cli = best!
        let other = skipByEstimate ? [rival, lzma].compactMap({ $0 }).min() : nil
        // Where the CLI's rule leaves long-distance matching off, the delta with it on.
        let longDistanceVariant = !ZstdCompressor.needsLongDistanceMatching(
            windowLog: ZstdDelta.windowLog(forContentSize: newSize)!, level: level, newSize: newSize, prefixSize: base.count)
        if isSmallPair(newSize: newSize, oldSize: base.count) {
            if longDistanceVariant, other.map({ cli.length <= $0 }) ?? true {
                try trial("delta-ldm", search: .cli, longDistanceMatching: true, optional: false)
            }
            return (best!.path, best!.length, nil)
        }
        if let other, cli.length > other + Self.variantReach(cli.length) {
            return (
                cli.path, cli.length,
                "delta: the deep search skipped with the long-distance and worker ones: another codec's delta (\(other) B) is over a fifth below the CLI's (\(cli.length) B)"
            )
        }
        if longDistanceVariant { try trial("delta-ldm", search: .cli, longDistanceMatching: true, optional: false) }
        try trial("delta-worker", search: .cliWorker, optional: true)
        if ZstdCompressor.deepSearchApplies(level: level, newSize: newSize, prefixSize: base.count) {
            try trial("delta-deep", search: .deep, optional: true)
        }
        return (best!.path, best!.length, nil)
    }

    /// The suffix-array delta of `path` against `basePath` (nil where either is over
    /// ``SuffixEncoder/maxFileSize``), in `suffix.payload` of the work folder; above 16 MiB
    /// one at a time in the process (its suffix index is 4 bytes per old byte, up to
    /// 256 MB). `strideByteAlways` is for a see-through expansion.
    func suffixDelta(
        _ path: String, newSize: Int64, basePath: String, strideByteAlways: Bool = false,
        limit: Int64 = SuffixEncoder.maxFileSize
    ) throws -> (path: String, length: Int64, encoding: PatchEncoding)? {
        let oldSize = FileStatus.of(basePath)?.size ?? 0
        guard newSize <= limit, oldSize <= limit else { return nil }
        let large = newSize > Self.largeFile || oldSize > Self.largeFile
        if large { Self.largeEncodes.wait() }
        defer { if large { Self.largeEncodes.signal() } }
        let output = workDirectory + "/suffix.payload"
        return try SuffixEncoder.encode(
            newPath: path, oldPath: basePath, level: level, strideByteAlways: strideByteAlways, into: output
        ).map { (output, $0.length, $0.encoding) }
    }

    func encode(
        _ path: String, prefix: UnsafeRawBufferPointer?, longDistanceMatching: Bool? = nil,
        search: ZstdCompressor.DeltaSearch = .cli, into output: String
    ) throws -> Int64 {
        let out = try SystemFile.createOrTruncate(output)
        return try compressor.encode(
            path: path, prefix: prefix, level: level,
            longDistanceMatching: longDistanceMatching, search: search, into: out)
    }
}
