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
        /// The wall seconds each encoding's trial took (its variants added up; the
        /// expansion codecs of one see-through trial are charged to the one kept).
        package var seconds: [PatchEncoding: Double] = [:]
        /// Why a delta was not used although a base was offered, and which trials rules
        /// or estimates left out.
        package var notes: [PayloadNote] = []
        /// The notes as one line; nil for none.
        package var note: String? { PayloadNote.line(notes) }
        /// Disk the client takes beside the new file while it applies a payload of an
        /// encoding tried, freed after it: the references a cross-file delta joins, a
        /// see-through delta's old and new expansions; none for the rest.
        var scratch: [PatchEncoding: Int64] = [:]
        /// That disk for the chosen payload.
        package var scratchBytes: Int64 { scratch[encoding] ?? 0 }
        /// Whether an estimate ruled out deltas of the file's bytes as they are, the
        /// cross-file trial with them (``byteLevelRulesOut(_:newPath:newSize:basePath:)``).
        var byteLevelRuledOut = false
        /// Bytes of references header at the start of a cross-file payload (``Cross/header``),
        /// which the patch writes with the source table's indices; 0 for other payloads.
        var crossHeader = 0

        /// Records a trial of `encoding` that made `length` bytes in `seconds`.
        mutating func record(_ encoding: PatchEncoding, _ length: Int64, seconds: Double) {
            tried[encoding] = length
            self.seconds[encoding, default: 0] += seconds
        }
    }

    /// Admits ``largeEncodeSlots`` whole-file delta encodes of large files at a time (see
    /// `encodeDelta`; a segmented cross-file delta and a suffix-array delta too): the
    /// publisher's peak memory is that many such encoders whatever the number of jobs.
    package static let largeEncodes = EncodePlaces(largeEncodeSlots)

    /// One large encode per core, as many as the machine's memory holds at
    /// ``largeEncodeMemory`` each, at least one.
    static let largeEncodeSlots = max(
        1, min(ProcessInfo.processInfo.activeProcessorCount, Int(ProcessInfo.processInfo.physicalMemory / largeEncodeMemory)))

    /// The memory one large encode is given: the deep search of a 187 MB expansion peaked
    /// at 3.2 GB, a suffix-array trial of a 256 MiB file takes its 1 GiB index and both
    /// files mapped.
    static let largeEncodeMemory: UInt64 = 6 << 30

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
    /// Whether a file above ``TrialPolicy/wholeFrameCrossLimit`` with references also gets one zstd
    /// frame against them joined (``PatchOptions/wholeCrossFrame``).
    let wholeCrossFrame: Bool
    /// Whether LZMA2 payloads are tried (``PatchOptions/lzma``).
    let lzma: Bool
    /// Whether files of no known container are scanned for zstd frames too (``PatchOptions/zstdFrames``).
    var zstdFrames = false

    /// A chooser encoding at `level` into files in `workDirectory`; files larger than
    /// `segmentThreshold` are cut into `segments`.
    package init(
        compressor: ZstdCompressor, level: Int, workDirectory: String, segments: SegmentedEncoder? = nil,
        segmentThreshold: Int64 = .max, skipByEstimate: Bool = true, wholeFileSuffix: Bool = false,
        wholeRawFileSuffix: Bool = false, wholeExpansionFrame: Bool = false, wholeCrossFrame: Bool = false,
        lzma: Bool = PatchCodecs.available.contains(PatchCodecs.lzma)
    ) {
        self.lzma = lzma
        self.wholeCrossFrame = wholeCrossFrame
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
            wholeExpansionFrame: options.wholeExpansionFrame, wholeCrossFrame: options.wholeCrossFrame,
            lzma: options.lzma && PatchCodecs.available.contains(PatchCodecs.lzma))
        zstdFrames = options.zstdFrames
    }

    /// Makes `payload`, a delta of another codec than zstd (suffix array, LZMA2), the
    /// chosen one; notes saying why no delta was made (``PayloadNote/Kind/noDelta``) no longer apply and go.
    func keep(_ payload: (path: String, length: Int64, encoding: PatchEncoding), in choice: inout Choice) {
        (choice.encoding, choice.payloadPath, choice.length) = (payload.encoding, payload.path, payload.length)
        choice.notes.removeAll { $0.kind == .noDelta }
    }

    /// What a caller's cross-file frame says (``chooseSingle(newPath:newSize:basePath:crossFirst:)``):
    /// its length, and the note of a rule that leaves out the suffix-array delta from the base alone.
    typealias FrameFirst = (length: Int64, baseOnlyNote: String?)

    /// A caller's maker of a cross-file frame, which calls `placeTaken` once it holds its
    /// place in ``largeEncodes`` (which work beside the frame may share), and returns nil
    /// where it makes none.
    typealias FrameMaker = (_ placeTaken: (SharedPlace) -> Void) throws -> FrameFirst?

    /// The smallest payload from this file and its base alone. `crossFirst`, where the
    /// caller has one, makes a payload that also reads other files (``chooseCrossFirst(newPath:newSize:basePath:cross:)``)
    /// before the suffix-array and zstd deltas and returns its length, a rival that can rule
    /// out the deep search (``encodeDelta(_:newSize:base:rival:rivalName:lzma:)``), and the
    /// note of a rule that leaves out the suffix-array delta from the base alone.
    func chooseSingle(newPath: String, newSize: Int64, basePath: String?, crossFirst: FrameMaker? = nil) throws -> Choice {
        if let basePath, let segments, newSize > segmentThreshold {
            return try chooseSegmented(newPath: newPath, newSize: newSize, basePath: basePath, encoder: segments, crossFirst: crossFirst)
        }
        var choice = Choice(encoding: .stored, payloadPath: newPath, length: newSize, tried: [.stored: newSize])
        guard newSize > 0 else { return choice }
        try trySeeThrough(newPath, basePath: basePath, into: &choice)
        if seeThroughSuffices(&choice, newSize: newSize) { return choice }
        if let basePath, byteLevelRulesOut(&choice, newPath: newPath, newSize: newSize, basePath: basePath) { return choice }
        var delta: (path: String, length: Int64, note: String?)?
        // The cross-file frame, where the caller makes one, comes first, then the
        // suffix-array delta (``frameThenSuffix(_:size:basePath:limit:crossFirst:)``): where a
        // large file's is far below a fast zstd delta, the deep zstd search (a whole-file
        // encode of 15-20 s) is not run. A large file's is made beside that search
        // (``deltaBeside(_:size:oldPath:base:suffix:other:lzma:unlinkWhenLeft:)``).
        let (frame, suffix) = try frameThenSuffix(
            newPath, size: newSize, basePath: basePath, limit: SuffixEncoder.maxFileSize, crossFirst: crossFirst)
        if let note = frame?.baseOnlyNote { choice.notes.append(PayloadNote(.trial, note)) }
        defer { _ = try? suffix?.wait() }  // no trial outlives the file's choice
        let base = try basePath.map { try MappedFile.source($0, displayPath: $0) }
        // The LZMA2 payload is made before the zstd deltas (and weighed after them, as
        // before): where it is well below the first, the second is not run.
        let (lzma, lzmaSeconds) = try Elapsed.measure { try lzmaPayload(newPath, newSize: newSize, base: base?.bytes) }
        if let base, let basePath {
            if let reason = ZstdDelta.deltaLimitReason(oldSize: Int64(base.bytes.count), newSize: newSize) {
                choice.notes = [PayloadNote(.noDelta, "no delta: \(reason)")]
            } else {
                let made = try deltaBeside(
                    newPath, size: newSize, oldPath: basePath, base: base.bytes, suffix: suffix,
                    other: frame.map { ($0.length, "the cross-file frame") }, lzma: lzma?.length, unlinkWhenLeft: false)
                delta = (made.path, made.length, made.note)
                choice.record(.delta, made.length, seconds: made.seconds)
                if let note = made.note { choice.notes.append(PayloadNote(.trial, note)) }
            }
        }
        // Beside a small pair's delta plain zstd is not tried: without the old file it found
        // no more than the delta on the sample world's 146 small files. (A rule of size, not
        // an estimate: the publish log does not repeat it for every small file.)
        let worthZstd =
            delta.map {
                let facts = TrialFacts(newSize: newSize, oldSize: Int64(base?.bytes.count ?? 0), delta: $0.length)
                return !policy.holds(.deltaFarBelowFile, facts) && !policy.holds(.smallPair, facts)
            } ?? true
        if worthZstd, let delta, let estimate = plainZstdRulesOut(delta.length, path: newPath, newSize: newSize) {
            choice.notes.append(PayloadNote(.trial, estimate))
        } else if worthZstd {
            let zstdPath = workDirectory + "/zstd.payload"
            let (length, seconds) = try Elapsed.measure { try encode(newPath, prefix: nil, into: zstdPath) }
            choice.record(.zstd, length, seconds: seconds)
            if length < choice.length {
                (choice.encoding, choice.payloadPath, choice.length) = (.zstd, zstdPath, length)
            }
        }
        if let delta {
            if delta.length < choice.length {
                (choice.encoding, choice.payloadPath, choice.length) = (.delta, delta.path, delta.length)
            } else {
                choice.notes.append(
                    PayloadNote(.trial, "delta (\(delta.length) B) not smaller than \(choice.encoding) (\(choice.length) B)"))
            }
        }
        // The suffix-array codec wins where numbers shifted by small amounts (coordinates,
        // ids): its byte differences repeat, which zstd's matching alone does not see; and
        // where new numbers fill fixed-width fields, which its filter sends as differences
        // (timezone polygons, 58 MB: 2.9 MB against the deep zstd delta's 4.1 MB).
        for (payload, seconds) in [(try suffix?.wait(), suffix?.seconds ?? 0), (lzma, lzmaSeconds)] {
            guard let payload else { continue }
            choice.record(payload.encoding, payload.length, seconds: seconds)
            if payload.length < choice.length { keep(payload, in: &choice) }
        }
        return choice
    }
}
