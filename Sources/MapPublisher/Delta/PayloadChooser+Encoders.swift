import Foundation
import MapDelta
import MapModel
import MapPlatform

/// The trials themselves: zstd deltas (CLI, long-distance, worker and deep searches),
/// the suffix-array delta, LZMA2 and the see-through payloads of files holding deflate streams.
extension PayloadChooser {
    /// The LZMA2 payload of a small file (``LzmaEncoder``), against its old file where it
    /// has one; nil where the trial does not apply. It wins on binary data of many small
    /// numbers (map tiles, tables), where zstd's entropy stages code whole symbols.
    func lzmaPayload(
        _ newPath: String, newSize: Int64, base: UnsafeRawBufferPointer?
    ) throws -> (path: String, length: Int64, encoding: PatchEncoding)? {
        let prefix = base.flatMap { $0.isEmpty ? nil : $0 }
        guard lzma, LzmaEncoder.applies(newSize: newSize, prefix: prefix?.count ?? 0) else { return nil }
        let path = workDirectory + "/lzma.payload"
        let length = try LzmaEncoder.encode(
            path: newPath, size: newSize, prefix: prefix, preset: LzmaEncoder.preset(forLevel: level), into: try SystemFile.createOrTruncate(path))
        return (path, length, prefix == nil ? .lzma : .lzmaDelta)
    }

    /// Tries a see-through payload for `newPath` and keeps it in `choice` when smaller.
    /// With a base, the new expansion is diffed against the old one; a new file is sent
    /// as its expansion compressed plus the recipe, when that is smaller than zstd of
    /// the compressed bytes. An expansion above the segment threshold is segmented.
    /// A file of no known container is scanned for gzip and zlib streams at any offset
    /// (tile archives); its patch then says so, so the client scans its old file too.
    /// An SQLite database (MBTiles) is gathered first: its tiles cut over overflow pages
    /// become whole streams.
    /// With ``zstdFrames``, a file of an unknown container with a base is scanned for zstd
    /// frames as well, and seen through them (``EncodingParts/View/scannedZstd``) where they
    /// hold more of its bytes than its deflate streams (a PMTiles archive of zstd tiles
    /// whose directories are gzip'd).
    func trySeeThrough(_ newPath: String, basePath: String?, into choice: inout Choice) throws {
        var streams = DeflateStreams.find(in: newPath)
        var view = EncodingParts.View.deflate
        if streams.isEmpty, let basePath {
            let (gathered, seconds) = try Elapsed.measure { try gatheredSeeThrough(newPath, basePath: basePath) }
            if let gathered {
                take(gathered, view: .gatheredDeflate, seconds: seconds, into: &choice)
                return
            }
        }
        if streams.isEmpty {
            streams = DeflateStreams.scan(in: newPath)
            if basePath != nil { view = .scannedDeflate }
            if zstdFrames, basePath != nil {
                let frames = ZstdFrames.scan(in: newPath)
                if frames.reduce(0, { $0 + $1.length }) > streams.reduce(0, { $0 + $1.length }) {
                    (streams, view) = (frames, .scannedZstd)
                }
            }
        }
        guard !streams.isEmpty else { return }
        let (payload, seconds) = try Elapsed.measure {
            try seeThrough(newPath, streams: streams, basePath: basePath, view: view)
        }
        take(payload, view: view, seconds: seconds, into: &choice)
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
    /// Above ``TrialPolicy/deepAloneFrom`` (an encoder of ~1.4 GB at 58 MB, more for a larger window: the publish
    /// of a 187 MB expansion peaked at 3.2 GB) such encodes run at most
    /// ``largeEncodeSlots`` at a time in the process, whatever the number of publish jobs.
    ///
    /// `rival`, the length of a payload of another codec already made for a large file (its
    /// suffix-array delta): where it is below ``TrialPolicy/deepSkipPercent`` percent of a fast zstd delta
    /// (level 3, long-distance matching: ~0.3 s for 55 MB), the deep search is not run and
    /// the fast delta stands for zstd. The deep search ends 20-30% below the fast one on map
    /// data (timezone polygons: 4.08 MB against 5.49 MB), so it cannot reach a rival that far
    /// below; the suffix-array delta there is 2.9 MB, 53% of the fast one.
    func encodeDelta(
        _ path: String, newSize: Int64, base: UnsafeRawBufferPointer, rival: Int64? = nil,
        rivalName: String = "the suffix-array delta", lzma: Int64? = nil
    ) throws -> (path: String, length: Int64, note: String?) {
        let large = newSize > TrialPolicy.deepAloneFrom || Int64(base.count) > TrialPolicy.deepAloneFrom
        if large { Self.largeEncodes.take() }
        defer { if large { Self.largeEncodes.give() } }
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
        if policy.holds(.deepSearchAlone, TrialFacts(newSize: newSize, oldSize: Int64(base.count))),
            ZstdCompressor.deepSearchApplies(level: level, newSize: newSize, prefixSize: base.count)
        {
            let file = workDirectory + "/delta-fast.payload"
            if let rival,
                let fast = try fastDeltaRulesOut(
                    "the deep search", rival: rival, rivalName: rivalName, path: path, base: base, compressor: compressor,
                    into: file)
            {
                return (file, fast.length, fast.note)
            }
            try trial("delta-deep", search: .deep, optional: true)
            if let best { return (best.path, best.length, Self.deepOnlyNote) }
        }
        // The long-distance, worker and deep variants of a larger pair run only where the
        // CLI's delta is within a fifth (``TrialPolicy/variantReach(_:)``) of the best payload of another
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
        if let other, policy.holds(.variantsOutOfReach, TrialFacts(newSize: newSize, delta: cli.length, rival: other)) {
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

    /// A suffix-array delta and where it is: the result of
    /// ``suffixDelta(_:newSize:oldSize:basePath:level:strideByteAlways:placeTaken:stopped:into:)``,
    /// which another thread may make (``BackgroundJob``).
    typealias SuffixTrial = (path: String, length: Int64, encoding: PatchEncoding)

    /// The suffix-array delta of `path` against `basePath` at `level`, in `output` (nil
    /// where the encoder declines the pair), on any thread: it reads only its arguments.
    /// Above 16 MiB it is one of the process's large encodes (``largeEncodes``: its suffix
    /// index is 4 bytes per old byte, up to 1 GiB) unless `placeTaken`: the caller holds
    /// that place (and gives it back). `strideByteAlways` is for a see-through expansion,
    /// whose add bytes are always differences (no see-through wire value has the sparse
    /// form); a raw file's are also tried sparse (``PatchEncoding/sparseSuffixDelta``).
    /// `stopped` is asked as the encoder goes; where it says yes the trial throws
    /// `CancellationError`.
    static func suffixDelta(
        _ path: String, newSize: Int64, oldSize: Int64, basePath: String, level: Int, strideByteAlways: Bool,
        placeTaken: Bool = false, stopped: () -> Bool = { false }, into output: String
    ) throws -> SuffixTrial? {
        let large = !placeTaken && (newSize > Self.largeFile || oldSize > Self.largeFile)
        if large { Self.largeEncodes.take() }
        defer { if large { Self.largeEncodes.give() } }
        return try SuffixEncoder.encode(
            newPath: path, oldPath: basePath, level: level, strideByteAlways: strideByteAlways,
            sparse: !strideByteAlways, stopped: stopped, into: output
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
