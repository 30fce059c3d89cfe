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
        let (mapped, windows, headerLength) = try segmentWindows(payload, source: source, target: target, cross: cross)
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
        let first = spot.map { Self.segmentsDone(spot: $0, building: building, table: table, checkpoint: checkpoint) } ?? 0
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
        try keep(output, building: building, digest: digestBehind ?? hasher?.finalize(), target: target, spot: spot, destination: destination)
        done = start + target.size
    }

    /// The old bytes a segmented payload's windows address: the old file (mapped, and
    /// returned too), or for a cross-file payload the files its references name, one after
    /// another (mapped, never joined), after a header of `headerLength` bytes.
    private func segmentWindows(
        _ payload: PatchManifest.Payload, source: PatchManifest.Source, target: PatchManifest.Target, cross: Bool
    ) throws -> (old: MappedFile, windows: SegmentOldBytes, headerLength: Int64) {
        let oldPath = oldRoot + "/" + source.path
        guard let status = FileStatus.of(oldPath), status.kind == .file else { throw PatchError.sourceMissing(path: source.path) }
        let mapped = try MappedFile.source(oldPath, displayPath: source.path)
        guard cross else { return (mapped, SegmentOldBytes(files: [mapped]), 0) }
        let (references, length) = try CrossReferences.decode(
            from: patch.file, at: payload.offset, within: payload.length, displayPath: target.path)
        let files = try referencedPaths(references, target: target).map { try MappedFile.source($0, displayPath: target.path) }
        return (mapped, SegmentOldBytes(files: files), length)
    }

    /// The segments of `building` an interrupted run finished, by the checkpoint in `spot`
    /// (checked against the table and the bytes); 0 to start over.
    private static func segmentsDone(spot: String, building: String, table: SegmentedDelta, checkpoint: SegmentCheckpoint) -> Int {
        guard let saved = SegmentCheckpoint.read(spot + ".json"), saved.identity == checkpoint.identity,
            saved.source == checkpoint.source, (1..<table.segments.count).contains(saved.segments),
            let size = FileStatus.of(building)?.size, size >= table.newOffset(of: saved.segments),
            finishedSegmentsAreIntact(building, table: table, count: saved.segments)
        else { return 0 }
        return saved.segments
    }

    /// Checks the segmented file built in `building` (its `digest`, where it was hashed as it
    /// was written, and its size) and moves it to `destination` when it was built in a
    /// resume `spot`; a file that fails is removed.
    private func keep(
        _ output: SystemFile, building: String, digest: SHA256Hash?, target: PatchManifest.Target, spot: String?,
        destination: String
    ) throws {
        let size = try output.size()
        guard digest ?? target.producedDigest == target.producedDigest, size == target.size else {
            FileSystem.remove(building)
            throw PatchError.outputMismatch(
                path: target.path, expectedSHA256: target.producedDigest.hex, foundSHA256: digest?.hex ?? "unknown",
                expectedSize: target.size, foundSize: size)
        }
        guard let spot else { return }
        try FileSystem.rename(building, destination)
        FileSystem.remove(spot + ".json")
        FileSystem.remove(spot + ".lock")
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
