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
    /// Zstd frames of more than this many bytes of content (a whole see-through expansion, a
    /// whole cross-file frame, a plain delta of a raw file) are decoded in one pass into a
    /// mapped file rather than streamed (``ZstdDelta/streamedContentLimit``).
    package let mappedAbove: Int64
    /// Frames decoded in one pass into a mapped file so far (see ``mappedAbove``).
    package internal(set) var mappedFrames = 0
    /// Old paths whose bytes were hashed, with the digest found.
    var verified: [PathKey: SHA256Hash] = [:]
    /// The digests the caller recorded for the old tree (its installed index), if any: what
    /// an old file the patch gives no digest for (form 2) is checked against and named by.
    package let recorded: [PathKey: SHA256Hash]
    /// Directories of the new tree created or known to exist (relative; "" is the root).
    private var directories: Set<PathKey> = [PathKey("")]
    /// Target bytes done.
    var done: Int64 = 0
    /// Targets produced so far (a cross-file delta may read those).
    var produced = 0
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
        case .add(let payload):
            try decode(payload, from: nil, target: target, destination: destination)
        case .patch(let index, let payload):
            try decode(payload, from: sources[index], target: target, destination: destination)
        }
        digests.append(decoded ?? digest)
        produced += 1
        report(force: true)
    }

    /// Produces a target from its payload, by the payload's parts
    /// (``PatchEncoding/parts``): a see-through view, a segmented layout and a cross-file
    /// reference each have their own decoder, and the rest is one codec's stream against
    /// the old file (`source`; `nil` for a new file).
    private mutating func decode(
        _ payload: PatchManifest.Payload, from source: PatchManifest.Source?, target: PatchManifest.Target, destination: String
    ) throws {
        let parts = payload.encoding.parts
        if parts.view.seesThrough {
            return try decodeSeeThrough(payload, parts: parts, source: source, target: target, destination: destination)
        }
        guard let source else { return try decode(payload, prefix: nil, target: target, destination: destination) }
        switch (parts.layout, parts.reference) {
        case (.segmented, let reference):
            try decodeSegmented(payload, source: source, target: target, destination: destination, cross: reference.isCross)
        case (.whole, let reference) where reference.isCross:
            // The frame after the references is the codec's delta against them, joined.
            let frame = PatchEncoding(parts: EncodingParts(.bytes, .whole, parts.codec, .old))
            guard let frame else { throw PatchError.corrupt(detail: "a cross-file \(parts.codec) payload for \(target.path)") }
            try decodeCross(
                payload, source: source, target: target, destination: destination, frame: frame, whole: reference == .wideCross)
        case (.whole, _) where parts.codec.suffixForm != nil && Self.decodesInPlace(target):
            try decodeSuffixInPlace(payload, source: source, target: target, destination: destination)
        case (.whole, _):
            let mapped = try MappedFile.source(oldRoot + "/" + source.path, displayPath: source.path)
            // The output's SHA-256 is checked before anything is kept, so wrong old bytes can
            // never produce an accepted file; hashing the old file first would read it twice.
            // Only when decoding fails is the old file hashed, to say which side was wrong.
            do {
                let whole = try parts.codec == .zstd && decodeMapped(payload, prefix: mapped.bytes, target: target, destination: destination)
                if !whole { try decode(payload, prefix: mapped.bytes, target: target, destination: destination) }
            } catch {
                throw mismatch(of: source, bytes: mapped.bytes) ?? error
            }
        }
    }

    /// Files from this size on are written behind (``HashingFileWriter``): below it, a
    /// thread costs more than it saves.
    static let writeBehindSize: Int64 = 4 << 20

    /// Streams a payload into a new file and checks the result.
    mutating func decode(
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
        let parts = payload.encoding.parts
        guard parts.view == .bytes, parts.layout == .whole, !parts.reference.isCross else {
            throw PatchError.corrupt(detail: "a \(payload.encoding) payload for \(target.path) outside a patch operation")
        }
        switch parts.codec {
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
        case .suffix(let form):
            guard let prefix else {
                throw PatchError.corrupt(detail: "a suffix delta for \(target.path) without its old file")
            }
            try SuffixDelta.decode(
                from: patch.file, offset: payload.offset, length: payload.length, old: prefix,
                targetSize: target.size, displayPath: target.path, form: form
            ) {
                try writer.write($0)
                done = start + writer.written
                report(force: false)
            }
        case .lzma:
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
        case .zstd:
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
            FileSystem.remove(destination)
            throw PatchError.outputMismatch(
                path: target.path, expectedSHA256: target.producedDigest.hex,
                foundSHA256: hash.hex, expectedSize: target.size, foundSize: size)
        }
        decoded = hash
        done = start + target.size
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
