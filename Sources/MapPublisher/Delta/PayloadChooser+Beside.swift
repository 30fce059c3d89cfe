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
    /// The suffix-array delta of the expansion at `newExpansion` (`size` bytes) against the
    /// one at `oldExpansion`: on a thread of its own where the publish has more than one
    /// and the expansion is large (its deep search comes next, see
    /// ``expansionFrame(_:size:oldExpansion:basePath:rival:)``), else made here. The caller
    /// waits for it before the expansions are emptied.
    func suffixTrial(_ newExpansion: String, size: Int64, oldExpansion: String, limit: Int64) throws
        -> BackgroundJob<SuffixTrial?>
    {
        let oldSize = FileStatus.of(oldExpansion)?.size ?? 0
        guard size <= limit, oldSize <= limit else { return BackgroundJob(done: nil) }
        let (level, output) = (level, workDirectory + "/suffix.payload")
        let make: @Sendable () throws -> SuffixTrial? = {
            try Self.suffixDelta(
                newExpansion, newSize: size, oldSize: oldSize, basePath: oldExpansion, level: level, strideByteAlways: true,
                into: output)
        }
        guard threads > 1, size > Self.largeFile || oldSize > Self.largeFile else { return BackgroundJob(done: try make()) }
        return BackgroundJob(make)
    }

    /// How many deep searches the process started beside their rival (for tests: a
    /// pair of files can only show that it made the same bytes).
    package static let deepSearchesBeside = Atomic<Int>(0)

    /// The threads a file's trials may use (``PatchOptions/segmentJobs``).
    var threads: Int { segments?.jobs ?? 1 }

    /// The zstd delta of a large expansion against the old one
    /// (``encodeDelta(_:newSize:base:rival:rivalName:lzma:)``), whose rival, the
    /// suffix-array delta, may still be in the making (``suffixTrial(_:size:oldExpansion:limit:)``).
    ///
    /// Where it is and the deep search alone applies, the deep search starts on a thread of
    /// its own as soon as another large encode may (``largeEncodes``), and the fast delta is
    /// made here; where the rival has ended by then, all is made one after the other. Where the rival then rules the deep search out
    /// (``rivalRulesOut(_:rival:rivalName:fast:)``), the fast delta stands for zstd, as it
    /// does one after the other, and the deep search is left to end on its own: zstd's
    /// worker cannot be stopped. It keeps its encode's place in ``largeEncodes`` until then,
    /// and the old expansion and its output are unlinked, not emptied, so that its mapping
    /// stays whole.
    func expansionFrame(
        _ newExpansion: String, size: Int64, oldExpansion: String, basePath: String, rival: BackgroundJob<SuffixTrial?>?
    ) throws -> (path: String, length: Int64, note: String?) {
        let base = try MappedFile.source(oldExpansion, displayPath: basePath)
        func oneAfterTheOther() throws -> (path: String, length: Int64, note: String?) {
            try encodeDelta(newExpansion, newSize: size, base: base.bytes, rival: try rival?.wait()?.length)
        }
        guard let rival, !rival.isFinished,
            policy.holds(.deepSearchAlone, TrialFacts(newSize: size, oldSize: Int64(base.bytes.count))),
            ZstdCompressor.deepSearchApplies(level: level, newSize: size, prefixSize: base.bytes.count)
        else { return try oneAfterTheOther() }
        // The rival holds one place; this waits for the next (never while holding one).
        Self.largeEncodes.wait()
        guard !rival.isFinished else {
            Self.largeEncodes.signal()
            return try oneAfterTheOther()
        }
        Self.deepSearchesBeside.add(1, ordering: .relaxed)
        let deepFile = workDirectory + "/delta-deep.payload"
        let deep = deepSearch(newExpansion, oldExpansion: oldExpansion, basePath: basePath, into: deepFile)
        var joined = false
        defer {
            if !joined {  // left running: a new file at either path is a new one, not the one it reads and writes
                FileSystem.remove(deepFile)
                FileSystem.remove(oldExpansion)
            }
        }
        let fastFile = workDirectory + "/delta-fast.payload"
        let fast = try fastDelta(path: newExpansion, base: base.bytes, compressor: try ZstdCompressor(), into: fastFile)
        let rivalLength = try rival.wait()?.length
        if let rivalLength, let ruledOut = rivalRulesOut("the deep search", rival: rivalLength, fast: fast) {
            return (fastFile, ruledOut.length, ruledOut.note)
        }
        let length: Int64
        do {
            length = try deep.wait()
            joined = true
        } catch PatchBuildError.codec(_, _) {  // e.g. a zstd without threads: the other variants, one after the other
            joined = true
            return try encodeDelta(newExpansion, newSize: size, base: base.bytes, rival: rivalLength)
        }
        return (deepFile, length, Self.deepOnlyNote)
    }

    /// ``ZstdCompressor/DeltaSearch/deep`` of `newExpansion` against `oldExpansion` into
    /// `output` on a thread of its own, which gives back the place in ``largeEncodes`` the
    /// caller took for it when it ends. Returns once that thread has mapped the old
    /// expansion and created the output, so that the caller may unlink both.
    private func deepSearch(_ newExpansion: String, oldExpansion: String, basePath: String, into output: String)
        -> BackgroundJob<Int64>
    {
        let level = level
        let opened = DispatchSemaphore(value: 0)
        let job = BackgroundJob<Int64> {
            defer { Self.largeEncodes.signal() }
            let old: MappedFile
            let out: SystemFile
            do {
                defer { opened.signal() }
                old = try MappedFile.source(oldExpansion, displayPath: basePath)
                out = try SystemFile.createOrTruncate(output)
            }
            return try withExtendedLifetime(old) {
                try ZstdCompressor().encode(path: newExpansion, prefix: old.bytes, level: level, search: .deep, into: out)
            }
        }
        opened.wait()
        return job
    }
}
