import Dispatch
import MapDelta
import MapModel
import MapPlatform
import Synchronization

/// A large expansion's two costly trials, its suffix-array delta and its deep zstd search,
/// made at once on two cores. Each is single-threaded and the suffix-array delta decides
/// whether the deep search is needed at all, so one after the other they left a core idle:
/// on the 187 MB expansion of one gzip stream of gazetteer records the suffix-array delta
/// took 37 s and the deep search about 110 s, one after the other. The payload is the one
/// the sequential order makes, whatever the number of threads.
extension PayloadChooser {
    /// The suffix-array delta of `newPath` (`size` bytes; a file or an expansion) against
    /// the file at `oldPath` (``suffixDelta(_:newSize:basePath:strideByteAlways:limit:)``):
    /// on a thread of its own where the publish has more than one and either file is large
    /// (its deep search comes next, see
    /// ``deltaBeside(_:size:oldPath:base:suffix:other:lzma:unlinkWhenLeft:)``), else made
    /// here. A caller that empties either file waits for it first.
    func suffixTrial(_ newPath: String, size: Int64, oldPath: String, strideByteAlways: Bool = false, limit: Int64)
        throws -> BackgroundJob<SuffixTrial?>
    {
        let oldSize = FileStatus.of(oldPath)?.size ?? 0
        guard size <= limit, oldSize <= limit else { return BackgroundJob(done: nil) }
        let (level, output) = (level, workDirectory + "/suffix.payload")
        let make: @Sendable () throws -> SuffixTrial? = {
            try Self.suffixDelta(
                newPath, newSize: size, oldSize: oldSize, basePath: oldPath, level: level, strideByteAlways: strideByteAlways,
                into: output)
        }
        guard threads > 1, size > Self.largeFile || oldSize > Self.largeFile else {
            let (trial, seconds) = try Elapsed.measure(make)
            return BackgroundJob(done: trial, seconds: seconds)
        }
        return BackgroundJob(make)
    }

    /// How many deep searches the process started beside their rival (for tests: a
    /// pair of files can only show that it made the same bytes).
    package static let deepSearchesBeside = Atomic<Int>(0)

    /// The threads a file's trials may use (``PatchOptions/segmentJobs``).
    var threads: Int { segments?.jobs ?? 1 }

    /// The zstd delta of a large expansion against the old one
    /// (``deltaBeside(_:size:oldPath:base:suffix:other:lzma:unlinkWhenLeft:)``): the old
    /// expansion is unlinked where a deep search is left running, as the caller empties it.
    func expansionFrame(
        _ newExpansion: String, size: Int64, oldExpansion: String, basePath: String, rival: BackgroundJob<SuffixTrial?>?
    ) throws -> (path: String, length: Int64, note: String?) {
        let base = try MappedFile.source(oldExpansion, displayPath: basePath)
        let delta = try deltaBeside(newExpansion, size: size, oldPath: oldExpansion, base: base.bytes, suffix: rival, unlinkWhenLeft: true)
        return (delta.path, delta.length, delta.note)
    }

    /// ``encodeDelta(_:newSize:base:rival:rivalName:lzma:)`` of `newPath` against the file
    /// at `oldPath` (mapped as `base`), whose rival is the smaller of its suffix-array delta,
    /// which may still be in the making (``suffixTrial(_:size:oldPath:strideByteAlways:limit:)``),
    /// and `other` (a cross-file frame), as one after the other.
    ///
    /// Where the suffix-array delta is still in the making and the deep search alone
    /// applies, the deep search starts on a thread of its own as soon as another large
    /// encode may (``largeEncodes``), and the fast delta is made here; where that delta has
    /// ended by then, all is made one after the other. Where the rival then rules the deep
    /// search out (``rivalRulesOut(_:rival:rivalName:fast:)``), the fast delta stands for
    /// zstd, as it does one after the other, and the deep search is left to end on its own:
    /// zstd's worker cannot be stopped. It keeps its place in ``largeEncodes`` until then;
    /// its output is unlinked, and with `unlinkWhenLeft` the old file too (one the caller
    /// would empty), so that its mapping stays whole. `waited`: the seconds spent waiting
    /// for the suffix-array delta, which are not this trial's.
    func deltaBeside(
        _ newPath: String, size: Int64, oldPath: String, base: UnsafeRawBufferPointer, suffix: BackgroundJob<SuffixTrial?>?,
        other: (length: Int64, name: String)? = nil, lzma: Int64? = nil, unlinkWhenLeft: Bool
    ) throws -> (path: String, length: Int64, note: String?, waited: Double) {
        var waited = 0.0
        func rival() throws -> (length: Int64, name: String)? {
            let (trial, seconds) = try Elapsed.measure { try suffix?.wait() }
            waited += seconds
            var rival = trial.map { (length: $0.length, name: "the suffix-array delta") }
            if let other, other.length < rival?.length ?? .max { rival = other }
            return rival
        }
        func oneAfterTheOther() throws -> (path: String, length: Int64, note: String?, waited: Double) {
            let rival = try rival()
            let delta = try encodeDelta(
                newPath, newSize: size, base: base, rival: rival?.length, rivalName: rival?.name ?? "the suffix-array delta",
                lzma: lzma)
            return (delta.path, delta.length, delta.note, waited)
        }
        guard let suffix, !suffix.isFinished,
            policy.holds(.deepSearchAlone, TrialFacts(newSize: size, oldSize: Int64(base.count))),
            ZstdCompressor.deepSearchApplies(level: level, newSize: size, prefixSize: base.count)
        else { return try oneAfterTheOther() }
        // The suffix-array delta holds one place; this waits for the next (never while holding one).
        Self.largeEncodes.wait()
        guard !suffix.isFinished else {
            Self.largeEncodes.signal()
            return try oneAfterTheOther()
        }
        Self.deepSearchesBeside.add(1, ordering: .relaxed)
        let deepFile = workDirectory + "/delta-deep.payload"
        let deep = deepSearch(newPath, oldPath: oldPath, into: deepFile)
        var joined = false
        defer {
            if !joined {  // left running: a new file at either path is a new one, not the one it reads and writes
                FileSystem.remove(deepFile)
                if unlinkWhenLeft { FileSystem.remove(oldPath) }
            }
        }
        let fastFile = workDirectory + "/delta-fast.payload"
        let fast = try fastDelta(path: newPath, base: base, compressor: try ZstdCompressor(), into: fastFile)
        let rival = try rival()
        if let rival, let ruledOut = rivalRulesOut("the deep search", rival: rival.length, rivalName: rival.name, fast: fast) {
            return (fastFile, ruledOut.length, ruledOut.note, waited)
        }
        let length: Int64
        do {
            length = try deep.wait()
            joined = true
        } catch PatchBuildError.codec(_, _) {  // e.g. a zstd without threads: the other variants, one after the other
            joined = true
            return try oneAfterTheOther()
        }
        return (deepFile, length, Self.deepOnlyNote, waited)
    }

    /// ``ZstdCompressor/DeltaSearch/deep`` of `newPath` against `oldPath` into `output` on a thread of its own, which gives back the place in ``largeEncodes`` the
    /// caller took for it when it ends. Returns once that thread has mapped the old file
    /// and created the output, so that the caller may unlink both.
    private func deepSearch(_ newPath: String, oldPath: String, into output: String) -> BackgroundJob<Int64> {
        let level = level
        let opened = DispatchSemaphore(value: 0)
        let job = BackgroundJob<Int64> {
            defer { Self.largeEncodes.signal() }
            let old: MappedFile
            let out: SystemFile
            do {
                defer { opened.signal() }
                old = try MappedFile.source(oldPath, displayPath: oldPath)
                out = try SystemFile.createOrTruncate(output)
            }
            return try withExtendedLifetime(old) {
                try ZstdCompressor().encode(path: newPath, prefix: old.bytes, level: level, search: .deep, into: out)
            }
        }
        opened.wait()
        return job
    }
}
