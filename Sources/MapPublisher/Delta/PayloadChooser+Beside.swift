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
    /// the file at `oldPath`, nil where either is over `limit`
    /// (``suffixDelta(_:newSize:oldSize:basePath:level:strideByteAlways:placeTaken:stopped:into:)``):
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
        let make: @Sendable (_ placeTaken: Bool) throws -> SuffixTrial? = {
            try Self.suffixDelta(
                newPath, newSize: size, oldSize: oldSize, basePath: oldPath, level: level, strideByteAlways: strideByteAlways,
                placeTaken: $0, into: output)
        }
        guard threads > 1, size > Self.largeFile || oldSize > Self.largeFile else {
            let (trial, seconds) = try Elapsed.measure { try make(false) }
            return BackgroundJob(done: trial, seconds: seconds)
        }
        // Its place is taken here, so that the job's seconds are the trial's own.
        Self.largeEncodes.take()
        return BackgroundJob {
            defer { Self.largeEncodes.give() }
            return try make(true)
        }
    }

    /// The cross-file frame `crossFirst` makes, where the caller has one, and the
    /// suffix-array delta of `newPath` from `basePath` alone
    /// (``suffixTrial(_:size:oldPath:strideByteAlways:limit:)``, up to `limit`), unless the
    /// frame's note rules it out (``TrialRule/baseLacksWhatTheFrameMatched``).
    ///
    /// Where the publish has more than one thread and either file is large, the delta is
    /// made beside the frame once the frame holds its place in ``largeEncodes`` (the two
    /// share it: a suffix index of 256 MiB takes 1 GiB, the deep search of a 187 MB file
    /// 3.2 GB), on a thread of the lowest priority (``BackgroundJob/init(idle:stoppable:)``),
    /// and stopped where the frame rules it out. It then takes only a core that nothing
    /// else of the publish wants: made beside the frame at the same priority, it slowed the
    /// frame and another file's trials (a gazetteer pair's patches took 33 s against 32 s),
    /// and where the frame ruled it out it was a core's work lost (a 27 MB cut: the frame
    /// 84 s, the delta 5.6 s). Else it comes after the frame. Either way the two are the
    /// same.
    func frameThenSuffix(
        _ newPath: String, size: Int64, basePath: String?, limit: Int64, crossFirst: FrameMaker?
    ) throws -> (frame: FrameFirst?, suffix: BackgroundJob<SuffixTrial?>?) {
        guard let basePath else { return (nil, nil) }
        guard let crossFirst else { return (nil, try suffixTrial(newPath, size: size, oldPath: basePath, limit: limit)) }
        var beside: BackgroundJob<SuffixTrial?>?
        func dropBeside() {
            guard let beside else { return }
            beside.stop()
            _ = try? beside.wait()
            Self.suffixTrialsStoppedBeside.add(1, ordering: .relaxed)
        }
        let frame: FrameFirst?
        do {
            frame = try crossFirst { beside = suffixBesideFrame(newPath, size: size, oldPath: basePath, limit: limit, place: $0) }
        } catch {
            dropBeside()
            throw error
        }
        if frame?.baseOnlyNote != nil {
            dropBeside()
            return (frame, nil)
        }
        return (frame, try beside ?? suffixTrial(newPath, size: size, oldPath: basePath, limit: limit))
    }

    /// The suffix-array delta of ``frameThenSuffix(_:size:basePath:limit:crossFirst:)``
    /// started beside the frame, sharing its `place` in ``largeEncodes`` until both have
    /// ended; nil where it is made after the frame.
    private func suffixBesideFrame(_ newPath: String, size: Int64, oldPath: String, limit: Int64, place: SharedPlace)
        -> BackgroundJob<SuffixTrial?>?
    {
        let oldSize = FileStatus.of(oldPath)?.size ?? 0
        guard threads > 1, size <= limit, oldSize <= limit, size > Self.largeFile || oldSize > Self.largeFile else { return nil }
        Self.suffixTrialsBesideFrame.add(1, ordering: .relaxed)
        let (level, output) = (level, workDirectory + "/suffix.payload")
        place.join()
        return BackgroundJob(idle: true) { stopped in
            defer { place.leave() }
            return try Self.suffixDelta(
                newPath, newSize: size, oldSize: oldSize, basePath: oldPath, level: level, strideByteAlways: false, placeTaken: true,
                stopped: stopped, into: output)
        }
    }

    /// How many suffix-array deltas the process started beside a cross-file frame, and how
    /// many of them it stopped (for tests, as ``deepSearchesBeside``).
    package static let suffixTrialsBesideFrame = Atomic<Int>(0)
    package static let suffixTrialsStoppedBeside = Atomic<Int>(0)

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
    /// would empty), so that its mapping stays whole. `seconds`: the trial's own, those of
    /// the encodes it kept or ruled out with (the fast delta, the deep search), not the wait
    /// for the suffix-array delta nor for a place in ``largeEncodes``.
    func deltaBeside(
        _ newPath: String, size: Int64, oldPath: String, base: UnsafeRawBufferPointer, suffix: BackgroundJob<SuffixTrial?>?,
        other: (length: Int64, name: String)? = nil, lzma: Int64? = nil, unlinkWhenLeft: Bool
    ) throws -> (path: String, length: Int64, note: String?, seconds: Double) {
        func rival() throws -> (length: Int64, name: String)? {
            let trial = try suffix?.wait()
            var rival = trial.map { (length: $0.length, name: "the suffix-array delta") }
            if let other, other.length < rival?.length ?? .max { rival = other }
            return rival
        }
        func oneAfterTheOther() throws -> (path: String, length: Int64, note: String?, seconds: Double) {
            let rival = try rival()
            let (delta, seconds) = try Elapsed.measure {
                try encodeDelta(
                    newPath, newSize: size, base: base, rival: rival?.length, rivalName: rival?.name ?? "the suffix-array delta",
                    lzma: lzma)
            }
            return (delta.path, delta.length, delta.note, seconds)
        }
        guard let suffix, !suffix.isFinished,
            policy.holds(.deepSearchAlone, TrialFacts(newSize: size, oldSize: Int64(base.count))),
            ZstdCompressor.deepSearchApplies(level: level, newSize: size, prefixSize: base.count)
        else { return try oneAfterTheOther() }
        // The suffix-array delta holds one place; this waits for the next (never while holding one).
        Self.largeEncodes.take()
        guard !suffix.isFinished else {
            Self.largeEncodes.give()
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
        let (fast, fastSeconds) = try Elapsed.measure {
            try fastDelta(path: newPath, base: base, compressor: try ZstdCompressor(), into: fastFile)
        }
        let rival = try rival()
        if let rival, let ruledOut = rivalRulesOut("the deep search", rival: rival.length, rivalName: rival.name, fast: fast) {
            return (fastFile, ruledOut.length, ruledOut.note, fastSeconds)
        }
        let length: Int64
        do {
            length = try deep.wait()
            joined = true
        } catch PatchBuildError.codec(_, _) {  // e.g. a zstd without threads: the other variants, one after the other
            joined = true
            return try oneAfterTheOther()
        }
        return (deepFile, length, Self.deepOnlyNote, fastSeconds + deep.seconds)
    }

    /// ``ZstdCompressor/DeltaSearch/deep`` of `newPath` against `oldPath` into `output` on a thread of its own, which gives back the place in ``largeEncodes`` the
    /// caller took for it when it ends. Returns once that thread has mapped the old file
    /// and created the output, so that the caller may unlink both.
    private func deepSearch(_ newPath: String, oldPath: String, into output: String) -> BackgroundJob<Int64> {
        let level = level
        let opened = DispatchSemaphore(value: 0)
        let job = BackgroundJob<Int64> {
            defer { Self.largeEncodes.give() }
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

/// A place in ``PayloadChooser/largeEncodes`` that work beside a large encode shares with
/// it (``PayloadChooser/frameThenSuffix(_:size:basePath:limit:crossFirst:)``): taken when
/// made, given back when the last of its holders leaves, so that the memory the place
/// stands for is never taken twice.
final class SharedPlace: Sendable {
    private let holders = Atomic<Int>(1)

    /// Takes a place (waiting for one), held by its maker.
    init() { PayloadChooser.largeEncodes.take() }

    /// One more holder.
    func join() { holders.add(1, ordering: .relaxed) }

    /// A holder leaves; the last gives the place back.
    func leave() {
        if holders.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { PayloadChooser.largeEncodes.give() }
    }
}
