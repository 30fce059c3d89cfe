import Foundation
import MapDelta
import MapModel
import MapPlatform
import MapStore

/// Runs one task of a ``PublishPlan``: writes a group's archive into the site's blobs, or
/// builds a patch into the site's staging folder, then records the result. Its output is
/// content-addressed and deterministic, so a task run twice, or by two workers at once,
/// leaves the same bytes; a task whose result is already there and checks out is skipped.
package enum PublishTaskRunner {
    /// Where a task reads and writes.
    package struct Places: Sendable {
        /// The release folder (default: the plan's).
        package var release: URL
        /// The site folder (default: the plan's).
        package var site: URL
        /// Where old trees are unpacked to diff against (default: inside the site).
        package var scratch: URL?
        /// Threads one patch may use for its files and segments (default: one per core);
        /// the patch's bytes are the same whatever the number.
        package var threads: Int?

        /// The plan's folders, each replaceable (a worker that mounts them elsewhere).
        package init(plan: PublishPlan, release: URL? = nil, site: URL? = nil, scratch: URL? = nil, threads: Int? = nil) {
            self.release = release ?? URL(fileURLWithPath: plan.release)
            self.site = site ?? URL(fileURLWithPath: plan.site)
            self.scratch = scratch
            self.threads = threads
        }

        /// The options of a patch of `plan` with its scratch in `work`.
        func patchOptions(_ plan: PublishPlan, work: URL) -> PatchOptions {
            var options = PatchOptions(level: plan.patchLevel, workDirectory: work, segmentLength: plan.segmentLength)
            options.embedsTreeHash = false  // the manifest's patch edge names it
            options.lzma = plan.lzma ?? options.lzma
            options.zstdFrames = plan.zstdFrames ?? false
            if let threads { (options.fileJobs, options.segmentJobs) = (threads, threads) }
            return options
        }
    }

    /// Runs task `id` of `plan` and returns one line saying what it wrote.
    package static func run(_ id: Int, of plan: PublishPlan, in places: Places) throws -> String {
        guard plan.tasks.indices.contains(id) else {
            throw PublishError("the plan of \(plan.version) has tasks 0–\(plan.tasks.count - 1), not \(id)")
        }
        let task = plan.tasks[id]
        let site = SiteWriter(root: places.site)
        if let done = try? JSONCoding.decode(PublishTaskResult.self, from: Data(contentsOf: site.taskResult(id, version: plan.version))),
            output(of: task, plan: plan, site: site, result: done).map({ isIntact($0, done) }) == true
        {
            return "\(task.label): already done (\(ByteFormat.string(done.size)))"
        }
        try site.prepare()
        defer { site.cleanUpOwn() }
        try FileManager.default.createDirectory(at: site.staging(plan.version), withIntermediateDirectories: true)
        let folder = ReleaseReader(root: places.release).groupFolder(task.package, task.group)
        let entries = try ReleaseReader.entries(of: task.package, task.group, in: folder)
        guard TreeHash.of(entries) == task.treeHash else {
            throw PublishError("data/\(task.package)/\(task.group) changed since the plan of \(plan.version) was made: make a new plan")
        }
        let (result, line) =
            switch task.kind {
            case .archive: try archive(task, id: id, of: plan, entries: entries, folder: folder, site: site)
            case .patch: try patch(task, id: id, of: plan, entries: entries, folder: folder, site: site, places: places)
            }
        var recorded = result
        recorded.taskDigest = task.digest(in: plan)
        try site.write(try JSONCoding.encoder(pretty: false).encode(recorded), to: site.taskResult(id, version: plan.version))
        return line
    }

    /// Runs archive task `id`: the group's files in one archive, stored as a blob.
    private static func archive(
        _ task: PublishPlan.Task, id: Int, of plan: PublishPlan, entries: [FileEntry], folder: URL, site: SiteWriter
    ) throws -> (PublishTaskResult, String) {
        // A client refuses a tree of more folders than its files can need: never publish one.
        let folders = TreeLimits.folders(of: entries.map(\.path))
        let allowed = TreeLimits(files: entries.count, bytes: 0).folders
        guard folders <= allowed else {
            throw PublishError(
                "data/\(task.package)/\(task.group) has \(folders) folders for \(entries.count) files; clients accept at most \(allowed) (twice the files and 4,096): keep the files in fewer, shallower folders"
            )
        }
        let temporary = site.temporaryFile("." + plan.format.rawValue)
        do {
            try ArchiveWriter.write(
                root: folder, files: entries.map { ($0.path, $0.size) }, to: temporary,
                format: plan.format, level: plan.level)
        } catch {
            throw PublishError("data/\(task.package)/\(task.group): \(error)")
        }
        let blob = try site.storeBlob(temporary)
        let unpacked = entries.reduce(0) { $0 + $1.size }
        let result = PublishTaskResult(
            task: id, sha256: blob.sha256, size: blob.size, unpackedSize: unpacked,
            files: entries.count)
        let line = "\(task.package)/\(task.group): \(entries.count) files, \(ByteFormat.string(unpacked)) → \(ByteFormat.string(blob.size)) archive"
        return (result, line)
    }

    /// Runs patch task `id`: the patch from the old version's tree (unpacked from its blob)
    /// to the group's files, staged for assembly; its line lists the files' notes.
    private static func patch(
        _ task: PublishPlan.Task, id: Int, of plan: PublishPlan, entries: [FileEntry], folder: URL, site: SiteWriter,
        places: Places
    ) throws -> (PublishTaskResult, String) {
        guard let from = task.fromArtifact, let version = task.fromVersion else {
            throw PublishError("task \(id) of the plan of \(plan.version) is a patch without an old version; make a new plan")
        }
        let work = (places.scratch ?? site.scratch).appendingPathComponent("task-\(id)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let oldTree = try unpack(
            from, from: site, into: work.appendingPathComponent("old"), sameAs: entries, in: folder,
            what: "\(task.package)/\(task.group) of \(version)")
        let temporary = site.temporaryFile(".patch")
        let stats: PatchStats
        do {
            let options = places.patchOptions(plan, work: work)
            stats = try PatchBuilder.build(
                from: oldTree, to: try TreeScan(root: folder, files: entries), output: temporary, options: options)
        } catch {
            throw PublishError("cannot build the patch \(task.package)/\(task.group) \(version)→\(plan.version): \(error)")
        }
        let (sha256, size) = try FileHashing.sha256(ofFileAt: temporary)
        do {
            try FileSystem.rename(temporary.path, site.stagedPatch(id, version: plan.version).path)
        } catch {
            throw PublishError("cannot stage the patch in \(site.staging(plan.version).path): \(error.reason)")
        }
        // Files left byte-level for a reason a publisher can act on (a deflate stream
        // another encoder made, a file too large for a delta) travel with the edge.
        let notes = stats.files.compactMap { file in file.edgeNote.map { "\(file.path): \($0)" } }
        // The publish log also says where an estimate left a trial out.
        let logged = stats.files.compactMap { file in file.note.map { "\(file.path): \($0)" } }
        // And which trials took the time, for the files whose trials took long.
        let slow = stats.files.compactMap { file in file.trialTimes.map { "\(file.path): trials \($0)" } }
        let result = PublishTaskResult(
            task: id, sha256: sha256, size: size, notes: notes.isEmpty ? nil : Array(notes.prefix(20)),
            writeBytes: stats.writeBytes, cloneWriteBytes: stats.cloneWriteBytes,
            codecs: PatchCodecs.needed(stats.files.flatMap(\.codecs)))
        let line =
            "\(task.package)/\(task.group): patch \(version)→\(plan.version) \(ByteFormat.string(size))"
            + (logged.prefix(20) + slow.prefix(20)).map { "\n    \($0)" }.joined()
        return (result, line)
    }

    /// The file a task's result describes: its blob, or its staged patch (or, once an
    /// assembly that failed later has moved it, the blob it became); `nil` for a result of
    /// another task or another plan.
    static func output(
        of task: PublishPlan.Task, plan: PublishPlan, site: SiteWriter,
        result: PublishTaskResult
    ) -> URL? {
        guard result.task == task.id, result.taskDigest == task.digest(in: plan) else { return nil }
        switch task.kind {
        case .archive: return site.blob(result.sha256)
        case .patch:
            let staged = site.stagedPatch(task.id, version: plan.version)
            return FileStatus.of(staged.path) == nil && FileStatus.of(site.blob(result.sha256).path) != nil
                ? site.blob(result.sha256) : staged
        }
    }

    /// Whether `file` holds exactly the bytes `result` records.
    static func isIntact(_ file: URL, _ result: PublishTaskResult) -> Bool {
        guard FileStatus.of(file.path)?.size == result.size,
            let hash = try? FileHashing.sha256(ofFileAt: file)
        else { return false }
        return hash.hex == result.sha256
    }

    /// Unpacks an earlier version's archive from the site and checks it against its tree
    /// hash. A file with the same path and bytes as one of `current` (the release's files
    /// in `release`) is not written: the tree names the release's copy (most of a group is
    /// unchanged between versions, and each file created costs more than its diff).
    private static func unpack(
        _ artifact: Artifact, from site: SiteWriter, into folder: URL, sameAs current: [FileEntry], in release: URL,
        what: String
    ) throws -> TreeScan {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let extraction: ArchiveExtractor.Extraction
        do {
            extraction = try ArchiveExtractor.extract(
                site.blob(artifact.sha256), into: folder,
                limits: .init(files: artifact.files, bytes: artifact.unpackedSize),
                leavingOut: Dictionary(current.map { (PathKey($0.path), $0) }, uniquingKeysWith: { first, _ in first }))
        } catch {
            throw PublishError("cannot unpack the published archive of \(what) to diff against: \(error)")
        }
        guard TreeHash.of(extraction.files) == artifact.treeHash else {
            throw PublishError("the published archive of \(what) does not match its manifest; the site is damaged")
        }
        var elsewhere: [PathKey: String] = [:]
        for file in extraction.files where extraction.leftOut.contains(PathKey(file.path)) {
            elsewhere[PathKey(file.path)] = release.path + "/" + file.path
        }
        return try TreeScan(root: folder, files: extraction.files, elsewhere: elsewhere)
    }
}
