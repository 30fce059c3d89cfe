import Foundation
import MapDelta
import MapModel
import MapPlatform
import Synchronization

/// See-through payloads: a file's deflate streams inflated on both sides, the content
/// diffed, and a recipe that rebuilds the exact compressed bytes.
extension PayloadChooser {
    /// Keeps a see-through payload in `choice` when it is the smallest so far, or notes why
    /// there is none.
    func take(
        _ result: Result<SeeThroughPayload, NoSeeThrough>, view: EncodingParts.View, seconds: Double, into choice: inout Choice
    ) {
        switch result {
        case .success(let payload):
            let encoding = PatchEncoding(seeThrough: view, layout: payload.segmented ? .segmented : .whole, suffix: payload.suffix)
            choice.record(encoding, payload.length, seconds: seconds)
            choice.scratch[encoding] = payload.scratchBytes
            for other in payload.others {  // the expansion codecs that lost
                let lost = PatchEncoding(seeThrough: view, layout: other.segmented ? .segmented : .whole, suffix: other.suffix)
                choice.tried[lost] = other.length
            }
            if payload.length < choice.length {
                (choice.encoding, choice.payloadPath, choice.length) = (encoding, payload.path, payload.length)
                choice.notes =
                    [payload.note.map { PayloadNote(.notSeenThrough, $0) }, payload.estimate.map { PayloadNote(.trial, $0) }]
                    .compactMap { $0 }
            }
        case .failure(let reason):
            choice.notes = [PayloadNote(.notSeenThrough, "no see-through delta: \(reason.description) (0% of its bytes seen through)")]
        }
    }

    /// A see-through payload and how much of the file it sees through.
    struct SeeThroughPayload {
        /// The payload file and its length.
        var path: String
        var length: Int64
        /// Deflate streams found, and those zlib reproduces (inflated in the payload).
        var streams: Int
        var reproduced: Int
        /// Compressed bytes of the reproduced streams, and the file's size.
        var seenBytes: Int64
        var fileBytes: Int64
        /// The old and new expansions' bytes, which the client writes in scratch files.
        var scratchBytes: Int64 = 0
        /// Whether the expansion is a segmented delta (an expansion above the threshold).
        var segmented = false
        /// Whether the expansion is a suffix delta (``PatchEncoding/suffixDeflateDelta``)
        /// rather than a zstd frame.
        var suffix = false
        /// The payload's length with each other expansion codec tried.
        var others: [(segmented: Bool, suffix: Bool, length: Int64)] = []
        /// What an estimate decided for the expansion (the publish log only).
        var estimate: String?

        /// What the publish log and `check-update --json` say of a file whose streams
        /// were not all reproduced; `nil` when they were.
        var note: String? {
            guard reproduced < streams else { return nil }
            let percent = fileBytes > 0 ? Int(Double(seenBytes) * 100 / Double(fileBytes)) : 0
            return "no see-through for \(streams - reproduced) of \(streams) deflate streams (zlib does not reproduce them): "
                + "\(percent)% of its bytes seen through"
        }
    }

    /// Why a gzip file gets no see-through delta.
    struct NoSeeThrough: Error, CustomStringConvertible {
        let description: String
    }

    /// A see-through payload for a file holding deflate `streams` (gzip, zip, OSM PBF),
    /// changed from `basePath`: both files expanded (streams inflated in place) in the work
    /// folder, each new stream's zlib parameters found (the payload must rebuild its bytes
    /// exactly; a stream zlib does not reproduce stays compressed, as raw bytes), and the
    /// new expansion diffed against the old one.
    /// With a `view` that scans, the old file's streams are found by scanning, as the client
    /// will; its stream codec says what they are (deflate streams or zstd frames).
    func seeThrough(_ newPath: String, streams: [DeflateStreams.Stream], basePath: String?, view: EncodingParts.View) throws
        -> Result<SeeThroughPayload, NoSeeThrough>
    {
        let scanned = view.scans
        let codec = view.streamCodec ?? .deflate
        // A client refuses a recipe of more segments: no work on a patch no device can use.
        guard streams.count <= DeflateRecipe.maxSegments else {
            return .failure(
                NoSeeThrough(
                    description:
                        "\(streams.count) deflate streams, more than the \(DeflateRecipe.maxSegments) a client's recipe takes; byte-level delta kept"
                ))
        }
        let oldExpansion = workDirectory + "/old.expanded"
        let newExpansion = workDirectory + "/new.expanded"
        defer {  // emptied, not removed: the next file's expansions reuse them
            FileSystem.empty(oldExpansion)
            FileSystem.empty(newExpansion)
        }
        let lengths: [Int64]
        var layout: [UInt8] = []
        do {
            if let basePath {
                let old = scanned ? codec.scan(in: basePath) : DeflateStreams.find(in: basePath)
                guard old.count <= DeflateRecipe.maxSegments else {  // a client would refuse to expand it
                    return .failure(
                        NoSeeThrough(
                            description:
                                "its old version has more than the \(DeflateRecipe.maxSegments) deflate streams a client expands; byte-level delta kept"
                        ))
                }
                let oldLengths = try DeflateRecipe.expand(basePath, streams: old, codec: codec, into: oldExpansion)
                if scanned { layout = DeflateRecipe.layout(of: old, lengths: oldLengths) }
            }
            lengths = try DeflateRecipe.expand(newPath, streams: streams, codec: codec, into: newExpansion)
        } catch PatchError.beyondLimits(let detail) {  // a client would refuse it: byte-level
            return .failure(NoSeeThrough(description: "\(detail); byte-level delta kept"))
        } catch let failure as SystemError {  // the scratch's disk, not the file: the publish stops and says so
            throw failure
        } catch {
            return .failure(NoSeeThrough(description: "its deflate streams do not inflate (\(error))"))
        }
        let original = try SystemFile.openForReading(newPath)
        let found = try reproducible(streams, lengths: lengths, of: original, expansion: newExpansion, codec: codec, pieces: !scanned)
        guard !found.isEmpty else {
            let library = codec == .zstd ? "zstd \(ZstdFrames.versionName(ZstdFrames.version))" : "zlib"
            return .failure(
                NoSeeThrough(description: "\(library) does not reproduce its \(codec) streams (another encoder made them); byte-level delta kept"))
        }
        if found.count < streams.count {  // expand again, inflating only what the library rebuilds
            _ = try DeflateRecipe.expand(newPath, streams: found.map(\.stream), codec: codec, into: newExpansion)
        }
        var segments: [DeflateRecipe.Segment] = []
        var end: Int64 = 0
        for item in found {
            segments.append(
                .init(
                    rawBefore: item.stream.offset - end, expandedLength: item.length, parameters: item.made.parameters,
                    png: item.stream.png, zstd: item.made.zstd, pieces: item.made.pieces))
            end = item.stream.offset + item.stream.length
        }
        let recipe =
            try scanned
            ? columnFrame(DeflateRecipe(segments: segments, tail: try original.size() - end).columns, prefix: layout)
            : DeflateRecipe(segments: segments, tail: try original.size() - end).encoded
        let scratchBytes = (FileStatus.of(oldExpansion)?.size ?? 0) + (FileStatus.of(newExpansion)?.size ?? 0)
        let expansion = try expansionDelta(newExpansion, oldExpansion: oldExpansion, basePath: basePath)
        let payload = workDirectory + "/deflate.payload"
        let out = try SystemFile.createOrTruncate(payload)
        try recipe.withUnsafeBytes { try out.writeAll($0) }
        try SystemFile.openForReading(expansion.path).forEachChunk { try out.writeAll($0) }
        return .success(
            SeeThroughPayload(
                path: payload, length: Int64(recipe.count) + expansion.length, streams: streams.count, reproduced: found.count,
                seenBytes: found.reduce(0) { $0 + $1.stream.length }, fileBytes: try original.size(), scratchBytes: scratchBytes,
                segmented: expansion.segmented, suffix: expansion.suffix,
                others: expansion.others.map { ($0.segmented, $0.suffix, Int64(recipe.count) + $0.length) },
                estimate: expansion.estimate))
    }

    /// The delta of a new expansion against the old one (an empty old one for a new file):
    /// the smallest of the codecs tried, with the lengths of those that lost.
    struct ExpansionDelta {
        /// The file holding it, and its length.
        var path: String
        var length: Int64
        /// Whether it is segmented (``SegmentedDelta``) or a suffix delta; neither: one zstd frame.
        var segmented: Bool
        var suffix: Bool
        /// The lengths of the others tried.
        var others: [(segmented: Bool, suffix: Bool, length: Int64)]
        /// What an estimate decided (the publish log only).
        var estimate: String?
    }

    /// The smallest ``ExpansionDelta`` of the expansion at `newExpansion` against the one at
    /// `oldExpansion` (of the file at `basePath`; nil for a new file).
    private func expansionDelta(_ newExpansion: String, oldExpansion: String, basePath: String?) throws -> ExpansionDelta {
        // An expansion above the threshold is cut into segments, each against a window of
        // the old expansion: the client's memory stays at a segment whatever the size.
        let frame = workDirectory + "/deflate.frame"
        var frameLength: Int64
        let newExpansionSize = FileStatus.of(newExpansion)?.size ?? 0
        var segmented = self.segments != nil && newExpansionSize > segmentThreshold
        // The suffix-array delta of the expansion comes first, so that it can rule out the
        // publish-level zstd search (``fastDeltaRulesOut(_:rival:path:base:compressor:into:)``).
        // A segmented expansion gets it too, of the whole expansion (its decoder needs no
        // segments): one gzip stream of 187 MB of gazetteer records was 3.4 MB segmented.
        // A large one's is made on a thread of its own, beside the zstd search
        // (``expansionFrame(_:size:oldExpansion:basePath:rival:)``).
        let early = try basePath.map { _ in
            try suffixTrial(
                newExpansion, size: newExpansionSize, oldPath: oldExpansion, strideByteAlways: true,
                limit: segmented ? wholeFileSuffixLimit : SuffixEncoder.maxFileSize)
        }
        defer { _ = try? early?.wait() }  // it maps both expansions: it ends before they are emptied
        var estimate: String?
        var others: [(segmented: Bool, suffix: Bool, length: Int64)] = []
        if let encoder = self.segments, segmented {
            if basePath == nil { _ = try SystemFile.createOrTruncate(oldExpansion) }
            let large = try segmentedOrWhole(
                newExpansion, size: newExpansionSize, oldExpansion: oldExpansion, basePath: basePath, suffix: early,
                encoder: encoder, into: frame)
            (frameLength, segmented, estimate) = (large.length, large.segmented, large.estimate)
            others += large.others
        } else if let basePath, newExpansionSize > Self.largeFile {
            // A large expansion gets the byte-level delta's search (the deep one, one at a
            // time): the same decoder, 11% smaller on 58 MB of timezone polygons.
            let delta = try expansionFrame(
                newExpansion, size: newExpansionSize, oldExpansion: oldExpansion, basePath: basePath, rival: early)
            estimate = delta.note.flatMap { $0 == Self.deepOnlyNote ? nil : $0 }
            FileSystem.remove(frame)
            try FileSystem.rename(delta.path, frame)
            frameLength = delta.length
        } else {
            let base = try basePath.map { try MappedFile.source(oldExpansion, displayPath: $0) }
            // Where the suffix-array delta is far below a fast zstd delta, the publish-level
            // one (a whole encode of the expansion, most of a small file's publish) is not
            // made: a 3 MB GeoJSON index's patch took 1.9 s, of which that encode 1.1 s.
            if skipByEstimate, level > Self.fastLevel, let base, let early = try early?.wait(),
                let fast = try fastDeltaRulesOut(
                    "the level-\(level) search", rival: early.length, path: newExpansion, base: base.bytes, compressor: compressor,
                    into: frame)
            {
                (frameLength, estimate) = fast
            } else {
                frameLength = try encode(newExpansion, prefix: base?.bytes, into: frame)
            }
        }
        // The suffix-array delta of the expansion, where it is smaller: coordinates inside
        // gzip and zip files shift and grow as they do in raw files.
        var expansionLength = frameLength
        var suffix = false
        if let trial = try early?.wait() {
            if trial.length < frameLength {
                FileSystem.remove(frame)
                try FileSystem.rename(trial.path, frame)
                others.append((segmented, false, frameLength))
                (expansionLength, suffix) = (trial.length, true)
            } else {
                others.append((false, true, trial.length))
            }
        }
        return ExpansionDelta(
            path: frame, length: expansionLength, segmented: segmented && !suffix, suffix: suffix, others: others,
            estimate: estimate)
    }

    /// The largest expansion that gets one zstd frame beside (or instead of) segments: 256 MiB.
    static let wholeExpansionFrameLimit: Int64 = 256 << 20

    /// The delta of an expansion above the segment threshold into `frame`: one zstd frame
    /// of the whole expansion where zstd's window covers the pair
    /// (``PatchOptions/wholeExpansionFrame``), else segments; without estimates both, the
    /// smaller kept. `suffix`, its suffix-array delta (perhaps still in the making), may
    /// rule out the deep search of the one frame.
    private func segmentedOrWhole(
        _ newExpansion: String, size newExpansionSize: Int64, oldExpansion: String, basePath: String?,
        suffix: BackgroundJob<SuffixTrial?>?, encoder: SegmentedEncoder, into frame: String
    ) throws -> (length: Int64, segmented: Bool, others: [(segmented: Bool, suffix: Bool, length: Int64)], estimate: String?) {
        var (segmented, frameLength, estimate) = (true, Int64(0), String?.none)
        var others: [(segmented: Bool, suffix: Bool, length: Int64)] = []
        let whole =
            try wholeExpansionFrame
            ? basePath.flatMap {
                try wholeFrame(
                    newExpansion, size: newExpansionSize, oldExpansion: oldExpansion, basePath: $0,
                    rival: suffix)
            } : nil
        if let whole, skipByEstimate {
            // One frame reaches every byte the segments' windows hold, and its long-distance
            // matcher finds what moved beyond them: the segments are not made (a rule, not a
            // measurement; without estimates both are).
            FileSystem.remove(frame)
            try FileSystem.rename(whole.path, frame)
            (frameLength, segmented, estimate) = (whole.length, false, whole.note)
        } else {
            let segmentedLength = try encoder.encode(newPath: newExpansion, oldPath: oldExpansion, into: frame)
            frameLength = segmentedLength
            if let whole {
                if whole.length < segmentedLength {
                    FileSystem.remove(frame)
                    try FileSystem.rename(whole.path, frame)
                    (frameLength, segmented) = (whole.length, false)
                    others.append((true, false, segmentedLength))
                } else {
                    others.append((false, false, whole.length))
                }
                estimate = whole.note
            }
        }
        return (frameLength, segmented, others, estimate)
    }

    /// One zstd frame of a whole expansion above the segment threshold against the whole
    /// old expansion (the publish-level search of ``encodeDelta(_:newSize:base:rival:lzma:)``,
    /// long-distance matching over the whole window), or nil where zstd's window cannot
    /// cover the pair. Segments see only a window of old bytes around their place; one
    /// frame also finds records that moved far and those repeated within the new expansion
    /// itself (cuts of one gazetteer in one stream). The client decodes it into a mapped
    /// file in one pass, with no window on its heap
    /// (``ZstdDelta/decodeFrame(_:prefix:into:displayPath:)``).
    ///
    /// Up to ``wholeExpansionFrameLimit``: a client that cannot map the output (an Apple platform, whose
    /// blocks this project does not reserve, or a file system that cannot map for writing)
    /// streams the frame with a window as large as the expansion on its heap, and the deep
    /// search's tables grow with the window (about 3.2 GB for 187 MB).
    func wholeFrame(
        _ newExpansion: String, size: Int64, oldExpansion: String, basePath: String, rival: BackgroundJob<SuffixTrial?>?
    ) throws -> (path: String, length: Int64, note: String?)? {
        guard size <= Self.wholeExpansionFrameLimit,
            ZstdDelta.deltaLimitReason(oldSize: FileStatus.of(oldExpansion)?.size ?? 0, newSize: size) == nil
        else { return nil }
        let delta = try expansionFrame(newExpansion, size: size, oldExpansion: oldExpansion, basePath: basePath, rival: rival)
        return (delta.path, delta.length, delta.note.flatMap { $0 == Self.deepOnlyNote ? nil : $0 })
    }

    /// The streams of `codec` its library reproduces, each with its expanded length and the
    /// segment that makes it again (its parameters), in file order. Streams are tried on up
    /// to ``SegmentedEncoder/jobs`` threads (each is independent); `lengths` are their
    /// inflated lengths in the expansion at `expansionPath`. With `pieces` (streams where
    /// the container says), a large deflate stream is proved in pieces on those threads
    /// (``DeflatePieces``), so that a client makes it again on its own.
    private func reproducible(
        _ streams: [DeflateStreams.Stream], lengths: [Int64], of original: SystemFile, expansion expansionPath: String,
        codec: EncodingParts.StreamCodec, pieces: Bool
    ) throws -> [(stream: DeflateStreams.Stream, length: Int64, made: DeflateRecipe.Segment)] {
        let expansion = try SystemFile.openForReading(expansionPath)
        var starts: [Int64] = []
        var expandedOffset: Int64 = 0
        var previousEnd: Int64 = 0
        for (stream, length) in zip(streams, lengths) {
            expandedOffset += stream.offset - previousEnd
            starts.append(expandedOffset)
            expandedOffset += length
            previousEnd = stream.offset + stream.length
        }
        let found = Mutex<[Int: DeflateRecipe.Segment]>([:])
        // The setting that made the last stream reproduced: a file's streams mostly share one.
        let last = Mutex<DeflateRecipe.Segment?>(nil)
        let next = Atomic<Int>(0)
        let offsets = starts
        let jobs = segments?.jobs ?? 1
        DispatchQueue.concurrentPerform(iterations: max(1, min(jobs, streams.count))) { _ in
            while true {
                let index = next.add(1, ordering: .relaxed).oldValue
                guard index < streams.count else { return }
                if let made = codec.reproduce(
                    streams[index], of: original, from: expansion, at: offsets[index], length: lengths[index],
                    hint: last.withLock { $0 }, pieces: pieces, threads: jobs)
                {
                    last.withLock { $0 = made }
                    found.withLock { $0[index] = made }
                }
            }
        }
        let made = found.withLock { $0 }
        return streams.indices.compactMap { index in
            made[index].map { (streams[index], lengths[index], $0) }
        }
    }

    /// `columns` as a ``ColumnFrame``: compressed with `prefix` (what the client computes
    /// from its old file: the layout of a recipe, the gather map) as zstd's prefix.
    func columnFrame(_ columns: [UInt8], prefix: [UInt8]) throws -> [UInt8] {
        let plain = workDirectory + "/columns.plain"
        let frame = workDirectory + "/columns.frame"
        defer {
            FileSystem.empty(plain)
            FileSystem.empty(frame)
        }
        try columns.withUnsafeBytes { try SystemFile.createOrTruncate(plain).writeAll($0) }
        let length = try prefix.withUnsafeBytes { try encode(plain, prefix: prefix.isEmpty ? nil : $0, into: frame) }
        var out = ColumnFrame.head(frameLength: length, columnsLength: columns.count)
        try SystemFile.openForReading(frame).forEachChunk { out += $0 }
        return out
    }
}
