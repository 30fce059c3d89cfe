import Crypto
import Foundation
package import MapModel
package import MapPlatform

/// The state of one ``PatchApplier/apply(patch:oldTree:into:progress:)`` call: which old
/// files are verified, which directories exist, how far progress is.
package struct PatchRun {
    package let patch: OpenedPatch
    package let oldRoot: String
    package let newRoot: String
    package let progress: ((Int64) -> Void)?
    /// Where segmented outputs are built and checkpointed, so that an apply killed in the
    /// middle of a large file resumes after its last finished segment; `nil`: built in place.
    package let resume: String?
    /// How the names of resume files (a half-built large file, its checkpoint and lock)
    /// begin in the resume folder, which holds nothing else.
    static let resumePrefix = "apply-"
    /// Threads that may rebuild a see-through file's deflate streams at once.
    package let threads: Int
    /// Whether each finished file and directory is fsync'ed; false where the caller
    /// flushes the whole file system before the tree is used (checkpoints of resumable
    /// files are synced either way: they must never claim bytes a crash lost).
    package let durable: Bool
    /// Bytes of segmented outputs an earlier, interrupted run had already produced (for a
    /// see-through file, its share of the target's bytes: see ``expansionShare``).
    package internal(set) var resumedBytes: Int64 = 0
    /// The most deflate streams rebuilt at once so far (at most ``threads``).
    package internal(set) var peakRebuildThreads = 0
    /// Whole see-through expansions (one zstd frame) larger than this are decoded in one
    /// pass into a mapped file rather than streamed (``ZstdDelta/streamedContentLimit``).
    package let mappedAbove: Int64
    /// See-through expansions decoded in one pass into a mapped file so far.
    package internal(set) var mappedExpansions = 0
    /// Old paths whose bytes were hashed, with the digest found.
    private var verified: [PathKey: SHA256Hash] = [:]
    /// The digests the caller recorded for the old tree (its installed index), if any: what
    /// an old file the patch gives no digest for (form 2) is checked against and named by.
    package let recorded: [PathKey: SHA256Hash]
    /// Directories of the new tree created or known to exist (relative; "" is the root).
    private var directories: Set<PathKey> = [PathKey("")]
    /// Target bytes done.
    var done: Int64 = 0
    /// Targets produced so far (a cross-file delta may read those).
    private var produced = 0
    /// The digest of each target produced so far, in order: the one checked as it was
    /// written, or for a file taken over as it is, the old file's as hashed.
    private(set) var digests: [SHA256Hash] = []
    /// Bytes done at the last progress report.
    private var reported: Int64 = -1
    /// The digest of the file the last whole-stream payload produced (``decode``).
    var decoded: SHA256Hash?

    package init(
        patch: OpenedPatch, oldRoot: String, newRoot: String, resume: String? = nil, threads: Int = 1,
        recorded: [PathKey: SHA256Hash] = [:], durable: Bool = true, mappedAbove: Int64 = ZstdDelta.streamedContentLimit,
        progress: ((Int64) -> Void)?
    ) {
        self.mappedAbove = mappedAbove
        self.durable = durable
        self.recorded = recorded
        self.resume = resume
        self.threads = max(1, threads)
        self.patch = patch
        self.oldRoot = oldRoot
        self.newRoot = newRoot
        self.progress = progress
    }

    /// Produces one target file in the new tree.
    package mutating func produce(_ target: PatchManifest.Target) throws {
        try makeParentDirectories(of: target.path)
        let destination = newRoot + "/" + target.path
        let sources = patch.manifest.sources
        var digest = target.producedDigest
        decoded = nil
        switch target.origin {
        case .unchanged:
            digest = try linkVerified(oldPath: target.path, target: target, destination: destination)
        case .copy(let index):
            digest = try linkVerified(oldPath: sources[index].path, target: target, destination: destination)
        case .add(let payload) where payload.encoding.seeThrough != nil:
            try decodeSeeThrough(payload, kind: payload.encoding.seeThrough!, source: nil, target: target, destination: destination)
        case .add(let payload):
            try decode(payload, prefix: nil, target: target, destination: destination)
        case .patch(let index, let payload) where payload.encoding.seeThrough != nil:
            try decodeSeeThrough(
                payload, kind: payload.encoding.seeThrough!, source: sources[index], target: target, destination: destination)
        case .patch(let index, let payload) where payload.encoding == .segmentedDelta:
            try decodeSegmented(payload, source: sources[index], target: target, destination: destination)
        case .patch(let index, let payload) where payload.encoding == .segmentedCrossDelta:
            try decodeSegmented(payload, source: sources[index], target: target, destination: destination, cross: true)
        case .patch(let index, let payload) where payload.encoding == .crossDelta:
            try decodeCross(payload, source: sources[index], target: target, destination: destination, frame: .delta)
        case .patch(let index, let payload) where payload.encoding == .lzmaCrossDelta:
            try decodeCross(payload, source: sources[index], target: target, destination: destination, frame: .lzmaDelta)
        case .patch(let index, let payload) where payload.encoding.isSuffix && Self.decodesInPlace(target):
            try decodeSuffixInPlace(payload, source: sources[index], target: target, destination: destination)
        case .patch(let index, let payload):
            let source = sources[index]
            let mapped = try MappedFile.source(oldRoot + "/" + source.path, displayPath: source.path)
            // The output's SHA-256 is checked before anything is kept, so wrong old bytes can
            // never produce an accepted file; hashing the old file first would read it twice.
            // Only when decoding fails is the old file hashed, to say which side was wrong.
            do {
                try decode(payload, prefix: mapped.bytes, target: target, destination: destination)
            } catch {
                throw mismatch(of: source, bytes: mapped.bytes) ?? error
            }
        }
        digests.append(decoded ?? digest)
        produced += 1
        report(force: true)
    }

    /// Decodes a cross-file delta: the referenced old and new files are joined into one
    /// temporary prefix beside the new tree (mapped, not read into memory), and the payload
    /// after the references (a `frame`: a zstd frame or an LZMA2 stream) is decoded against
    /// it. The output's SHA-256 is checked as for any payload; when it fails, the old files
    /// read are checked to say which was wrong.
    private mutating func decodeCross(
        _ payload: PatchManifest.Payload, source: PatchManifest.Source,
        target: PatchManifest.Target, destination: String, frame encoding: PatchEncoding
    ) throws {
        let (references, headerLength) = try CrossReferences.decode(
            from: patch.file, at: payload.offset,
            within: payload.length, displayPath: target.path)
        let paths = try referencedPaths(references, target: target)
        let total = paths.reduce(Int64(0)) { $0 + (FileStatus.of($1)?.size ?? 0) }
        guard total <= CrossReferences.maxPrefixBytes else {
            throw PatchError.corrupt(detail: "\(target.path) refers to more than \(CrossReferences.maxPrefixBytes >> 20) MiB of files")
        }
        let joined = newRoot + ".cross-\(UUID().uuidString)"
        defer { FileSystem.remove(joined) }
        let out = try SystemFile.createOrTruncate(joined)
        for path in paths {
            try SystemFile.openForReading(path).forEachChunk { try out.writeAll($0) }
        }
        let prefix = try MappedFile.source(joined, displayPath: target.path)
        let frame = PatchManifest.Payload(
            encoding: encoding, length: payload.length - headerLength,
            offset: payload.offset + headerLength)
        do {
            try decode(
                frame, prefix: prefix.bytes, windowCover: Int64(prefix.bytes.count) + target.size,
                target: target, destination: destination)
        } catch {
            for case .old(let index) in references.references {
                if let mismatch = mismatch(of: patch.manifest.sources[index], bytes: nil) { throw mismatch }
            }
            throw error
        }
    }

    /// The full paths of the files `references` names for `target`, each a regular file:
    /// old files of the patch's sources, new files produced before this one; none twice.
    private func referencedPaths(_ references: CrossReferences, target: PatchManifest.Target) throws -> [String] {
        let sources = patch.manifest.sources
        let targets = patch.manifest.targets
        var paths: [String] = []
        for reference in references.references {
            let path: String
            let relative: String
            switch reference {
            case .old(let index):
                guard sources.indices.contains(index) else { throw PatchError.corrupt(detail: "\(target.path) refers to a missing old file") }
                (path, relative) = (oldRoot + "/" + sources[index].path, sources[index].path)
            case .new(let index):
                guard index < produced, targets.indices.contains(index) else {
                    throw PatchError.corrupt(detail: "\(target.path) refers to a new file not produced before it")
                }
                (path, relative) = (newRoot + "/" + targets[index].path, targets[index].path)
            }
            guard let status = FileStatus.of(path), status.kind == .file else { throw PatchError.sourceMissing(path: relative) }
            paths.append(path)
        }
        guard Set(paths).count == paths.count else { throw PatchError.corrupt(detail: "\(target.path) refers to a file twice") }
        return paths
    }

    /// After a decode failed: the error naming `source` when its bytes (`bytes`, else read
    /// from the old tree) are not the ones the patch expects, so the message says which
    /// side was wrong; `nil` when the old file is right (the payload is at fault).
    func mismatch(of source: PatchManifest.Source, bytes: UnsafeRawBufferPointer?) -> PatchError? {
        let found =
            verified[PathKey(source.path)]
            ?? bytes.map(SHA256Hash.of)
            ?? (try? FileHashing.hash(ofFile: oldRoot + "/" + source.path).hash)
        // Without a digest (a small source of a form-2 patch) nor a recorded one, nothing says
        // which side was wrong.
        guard let expected = source.sha256 ?? recorded[PathKey(source.path)], found != expected else { return nil }
        return .sourceMismatch(path: source.path, expectedSHA256: expected.hex, foundSHA256: found?.hex ?? "unreadable")
    }

    /// Hashes the old file (once per path), requires the target's digest where the patch
    /// gives one, then links it; returns the digest found, the target's (``digests``).
    private mutating func linkVerified(oldPath: String, target: PatchManifest.Target, destination: String) throws -> SHA256Hash {
        let source = oldRoot + "/" + oldPath
        guard let status = FileStatus.of(source), status.kind == .file else {
            throw PatchError.sourceMissing(path: oldPath)
        }
        let found: SHA256Hash
        if let known = verified[PathKey(oldPath)] {
            found = known
        } else {
            found = try FileHashing.hash(ofFile: source).hash
            verified[PathKey(oldPath)] = found
        }
        let expected = target.sha256 ?? recorded[PathKey(oldPath)]
        guard found == expected ?? found, status.size == target.size else {
            // Without a digest in the patch or the caller's record only the size can be off.
            throw PatchError.sourceMismatch(
                path: oldPath, expectedSHA256: expected?.hex ?? "any, \(target.size) bytes long",
                foundSHA256: expected == nil ? "\(status.size) bytes" : found.hex)
        }
        try TreeLinker.linkOrCopy(
            source: source, destination: destination, displayPath: target.path,
            sha256: found, size: target.size, durable: durable)
        done += target.size
        return found
    }

    /// Files from this size on are written behind (``HashingFileWriter``): below it, a
    /// thread costs more than it saves.
    static let writeBehindSize: Int64 = 4 << 20

    /// Streams a payload into a new file and checks the result.
    private mutating func decode(
        _ payload: PatchManifest.Payload, prefix: UnsafeRawBufferPointer?,
        windowCover: Int64? = nil,
        target: PatchManifest.Target, destination: String
    ) throws {
        // A file of a few MB or more is hashed and written on a second thread while this one
        // decodes, where the thread cap allows one.
        let writer = try HashingFileWriter(
            path: destination, displayPath: target.path, limit: target.size,
            writeBehind: threads > 1 && target.size >= Self.writeBehindSize)
        let start = done
        switch payload.encoding {
        case .stored:
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
            defer { buffer.deallocate() }
            var offset: Int64 = 0
            while offset < payload.length {
                let want = Int(min(Int64(buffer.count), payload.length - offset))
                let chunk = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want])
                guard try patch.file.readChunk(into: chunk, at: payload.offset + offset) == want else {
                    throw PatchError.truncated(detail: "stored payload of \(target.path) ends early")
                }
                try writer.write(UnsafeRawBufferPointer(chunk))
                offset += Int64(want)
                done = start + offset
                report(force: false)
            }
        case .suffixDelta, .filteredSuffixDelta:
            guard let prefix else { throw PatchError.corrupt(detail: "a suffix delta for \(target.path) without its old file") }
            try SuffixDelta.decode(
                from: patch.file, offset: payload.offset, length: payload.length, old: prefix,
                targetSize: target.size, displayPath: target.path, filtered: payload.encoding == .filteredSuffixDelta
            ) {
                try writer.write($0)
                done = start + writer.written
                report(force: false)
            }
        case .deflateDelta, .segmentedDelta, .crossDelta, .scannedDeflateDelta, .gatheredDeflateDelta, .segmentedDeflateDelta,
            .segmentedScannedDeflateDelta, .segmentedGatheredDeflateDelta, .segmentedCrossDelta, .suffixDeflateDelta,
            .suffixScannedDeflateDelta, .suffixGatheredDeflateDelta, .lzmaCrossDelta:
            throw PatchError.corrupt(detail: "a \(payload.encoding) payload for \(target.path) outside a patch operation")
        case .lzma, .lzmaDelta:
            #if LZMA
                try LzmaDelta.decode(
                    from: patch.file, offset: payload.offset, length: payload.length, prefix: prefix,
                    expectedSize: target.size, displayPath: target.path
                ) {
                    try writer.write($0)
                    done = start + writer.written
                    report(force: false)
                }
            #else
                throw PatchError.codec(path: target.path, message: "this build has no LZMA2 decoder (built without the trait LZMA)")
            #endif
        case .zstd, .delta:
            try ZstdDelta.decodeFrame(
                from: patch.file, offset: payload.offset, length: payload.length,
                prefix: prefix, expectedSize: target.size, windowCover: windowCover,
                displayPath: target.path
            ) {
                try writer.write($0)
                done = start + writer.written
                report(force: false)
            }
        }
        let (hash, size) = try writer.finish(sync: durable)
        // A small file of a form-3 patch comes without a digest: the tree hash covers the one
        // found here (``digests``).
        guard hash == target.sha256 ?? hash, size == target.size else {
            unlink(destination)
            throw PatchError.outputMismatch(
                path: target.path, expectedSHA256: target.producedDigest.hex,
                foundSHA256: hash.hex, expectedSize: target.size, foundSize: size)
        }
        decoded = hash
        done = start + target.size
    }

    /// Writes the windows of `chunk` (at `offset` of a file cloned from `old`) that differ
    /// from the old bytes in place; equal windows stay shared with the old file.
    static func writeChanged(
        _ chunk: UnsafeRawBufferPointer, at offset: Int64, old: UnsafeRawBufferPointer,
        to output: SystemFile
    ) throws {
        try writeChanged(chunk, at: offset, to: output) { piece, absolute in
            absolute + piece.count <= old.count && memcmp(old.baseAddress! + absolute, piece.baseAddress!, piece.count) == 0
        }
    }

    /// Writes the windows of `chunk` (at `offset` of `output`, aligned to
    /// ``SegmentedDelta/cloneWindow``) for which `holds(piece, offset)` says the file does
    /// not hold them already.
    static func writeChanged(
        _ chunk: UnsafeRawBufferPointer, at offset: Int64, to output: SystemFile,
        holds: (UnsafeRawBufferPointer, Int) throws -> Bool
    ) throws {
        let window = SegmentedDelta.cloneWindow
        var position = 0
        while position < chunk.count {
            let absolute = Int(offset) + position
            let end = min(chunk.count, position + window - absolute % window)
            let piece = UnsafeRawBufferPointer(rebasing: chunk[position..<end])
            if try !holds(piece, absolute) { try output.writeAll(piece, at: Int64(absolute)) }
            position = end
        }
    }

    /// Rebuilds a large file segment by segment (``SegmentedDelta``). With a resume folder
    /// the file is built there and a checkpoint is written after each segment (data
    /// fsync'ed first): a later run of the same patch continues after the last finished
    /// segment, truncating anything after it, and moves the file into place at the end.
    /// A fresh run checks the whole file's SHA-256 as for any payload; a resumed one
    /// re-hashes the finished segments it takes over and checks every segment it produces
    /// against the table's SHA-256 (the table is part of the pinned patch), and the size.
    private mutating func decodeSegmented(
        _ payload: PatchManifest.Payload, source: PatchManifest.Source,
        target: PatchManifest.Target, destination: String, cross: Bool = false
    ) throws {
        let oldPath = oldRoot + "/" + source.path
        guard let status = FileStatus.of(oldPath), status.kind == .file else { throw PatchError.sourceMissing(path: source.path) }
        let mapped = try MappedFile.source(oldPath, displayPath: source.path)
        // The windows address the old file, or for a cross-file payload the files its
        // references name, one after another (mapped, never joined).
        var headerLength: Int64 = 0
        var windows = SegmentOldBytes(files: [mapped])
        if cross {
            let (references, length) = try CrossReferences.decode(
                from: patch.file, at: payload.offset, within: payload.length, displayPath: target.path)
            headerLength = length
            windows = SegmentOldBytes(
                files: try referencedPaths(references, target: target).map { try MappedFile.source($0, displayPath: target.path) })
        }
        let (table, tableLength) = try SegmentedDelta.decode(
            from: patch.file, at: payload.offset + headerLength, within: payload.length - headerLength,
            targetSize: target.size, oldSize: windows.size,
            displayPath: target.path)
        // The spot is this run's while it holds its lock: another group of the same run (or
        // another process) building the same file builds in place instead.
        let claimed = ResumeSpot.claim(in: resume, target: target, identity: table.identity)
        let spot = claimed?.path
        defer { withExtendedLifetime(claimed) {} }
        let building = spot.map { $0 + ".partial" } ?? destination
        let checkpoint = SegmentCheckpoint(identity: table.identity, source: source.sha256?.hex ?? source.path, segments: 0)
        var first = 0
        if let spot, let saved = SegmentCheckpoint.read(spot + ".json"), saved.identity == checkpoint.identity,
            saved.source == checkpoint.source, (1..<table.segments.count).contains(saved.segments),
            let size = FileStatus.of(building)?.size, size >= table.newOffset(of: saved.segments),
            Self.finishedSegmentsAreIntact(building, table: table, count: saved.segments)
        {
            first = saved.segments
        }
        let output: SystemFile
        // On a file system with copy-on-write clones the new file starts as a clone of the
        // old one, and only bytes that differ in place are written: the file takes about
        // the changed bytes of extra space instead of a whole second copy.
        var cloned = false
        if first > 0 {
            output = try SystemFile.openForUpdate(building)
            try output.truncate(to: table.newOffset(of: first))
            resumedBytes += table.newOffset(of: first)
        } else {
            FileSystem.remove(building)
            cloned = FileSystem.cloneFile(oldPath, building)
            output = try cloned ? SystemFile.openForUpdate(building) : SystemFile.createOrTruncate(building)
        }
        var written = table.newOffset(of: first)
        let old = mapped.bytes
        var hasher = first == 0 ? SHA256Hasher() : nil
        // A fresh file that is not a clone is hashed and written on a second thread while
        // this one decodes, where the thread cap allows one (``WriteBehind``); its writes
        // are sequential from the first segment this run makes.
        let behind = !cloned && hasher != nil && threads > 1 && target.size >= Self.writeBehindSize ? WriteBehind(output) : nil
        defer { behind?.end() }
        if behind != nil { try output.seek(to: written) }
        let start = done
        done = start + written
        do {
            try table.decode(
                from: patch.file, framesOffset: payload.offset + headerLength + tableLength,
                window: { try windows.window(of: $0, displayPath: target.path) }, from: first,
                displayPath: target.path, verifySegments: hasher == nil,
                output: { chunk in
                    if cloned {
                        try Self.writeChanged(chunk, at: written, old: old, to: output)
                    } else if let behind {
                        try behind.write(chunk)
                    } else {
                        try output.writeAll(chunk, at: written)
                    }
                    if behind == nil { hasher?.update(chunk) }
                    written += Int64(chunk.count)
                    done = start + written
                    report(force: false)
                },
                finished: { index in
                    windows.release(table.segments[index])
                    guard let spot else { return }
                    try behind?.waitUntilWritten()
                    try output.sync()
                    var progress = checkpoint
                    progress.segments = index + 1
                    try progress.write(spot + ".json")
                })
        } catch {
            throw mismatch(of: source, bytes: mapped.bytes) ?? error
        }
        let digestBehind = try behind?.finish()
        if cloned { try output.truncate(to: written) }  // the old file may have been longer
        if durable { try output.sync() }
        let size = try output.size()
        if let digest = digestBehind ?? hasher?.finalize(), digest != target.producedDigest || size != target.size {
            FileSystem.remove(building)
            throw PatchError.outputMismatch(
                path: target.path, expectedSHA256: target.producedDigest.hex, foundSHA256: digest.hex,
                expectedSize: target.size, foundSize: size)
        }
        guard size == target.size else {
            FileSystem.remove(building)
            throw PatchError.outputMismatch(
                path: target.path, expectedSHA256: target.producedDigest.hex, foundSHA256: "unknown",
                expectedSize: target.size, foundSize: size)
        }
        if let spot {
            try FileSystem.rename(building, destination)
            FileSystem.remove(spot + ".json")
            FileSystem.remove(spot + ".lock")
        }
        done = start + target.size
    }

    /// Whether the first `count` segments of the partial file at `path` still hash as the
    /// table says: a resume reads them (cheap) rather than decoding them again, and a
    /// partial file damaged since the checkpoint starts over instead of being trusted.
    static func finishedSegmentsAreIntact(_ path: String, table: SegmentedDelta, count: Int) -> Bool {
        guard let file = try? SystemFile.openForReading(path) else { return false }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        for segment in table.segments.prefix(count) {
            var hasher = SHA256Hasher()
            var done: Int64 = 0
            while done < segment.newLength {
                let want = Int(min(Int64(buffer.count), segment.newLength - done))
                guard
                    let got = try? file.readChunk(
                        into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]),
                        at: offset + done), got == want
                else { return false }
                hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<want]))
                done += Int64(want)
            }
            guard hasher.finalize() == segment.sha256 else { return false }
            offset += segment.newLength
        }
        return true
    }

    /// Creates the missing directories above `path` in the new tree, at most
    /// ``TreeLimits/folders`` of the patch's limits.
    private mutating func makeParentDirectories(of path: String) throws {
        for dir in RelativePath.ancestors(of: path) {
            let relative = String(dir)
            if directories.contains(PathKey(relative)) { continue }
            // The root is one of `directories`, not a folder of the tree.
            guard directories.count <= patch.limits.folders else {
                throw PatchError.beyondLimits(detail: "more than the \(patch.limits.folders) folders a tree of its files can hold")
            }
            let full = newRoot + "/" + relative
            try FileSystem.makeDirectory(full)
            directories.insert(PathKey(relative))
        }
    }

    /// fsyncs every directory of the new tree so the new entries survive a crash.
    package func syncDirectories() throws {
        guard durable else { return }
        for key in directories.sorted(by: >) {
            let dir = String(decoding: key.bytes, as: UTF8.self)
            try SystemFile.openDirectory(dir.isEmpty ? newRoot : newRoot + "/" + dir).sync()
        }
    }

    /// Reports progress at file ends and at least every 4 MiB inside a file.
    mutating func report(force: Bool) {
        guard let progress, done != reported, force || done - reported >= 4 << 20 else { return }
        reported = done
        progress(done)
    }
}

/// A streaming SHA-256 producing ``SHA256Hash``.
struct SHA256Hasher {
    private var hasher = SHA256()

    mutating func update(_ chunk: UnsafeRawBufferPointer) { hasher.update(bufferPointer: chunk) }

    func finalize() -> SHA256Hash { SHA256Hash(hasher.finalize()) }
}
