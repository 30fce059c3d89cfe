import Foundation
import MapModel
import MapPlatform

/// Applying segmented deltas: one zstd frame per segment, each against a window of the old
/// file, built in the resume folder with a checkpoint after each segment.
extension PatchRun {
    /// Rebuilds a large file segment by segment (``SegmentedDelta``). With a resume folder
    /// the file is built there and a checkpoint is written after each segment (data
    /// fsync'ed first): a later run of the same patch continues after the last finished
    /// segment, truncating anything after it, and moves the file into place at the end.
    /// A fresh run checks the whole file's SHA-256 as for any payload; a resumed one
    /// re-hashes the finished segments it takes over and checks every segment it produces
    /// against the table's SHA-256 (the table is part of the pinned patch), and the size.
    mutating func decodeSegmented(
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
}
