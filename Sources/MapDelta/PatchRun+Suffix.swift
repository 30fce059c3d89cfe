import Crypto
import Foundation
import MapModel
import MapPlatform

/// Applying a large file's suffix delta (``SuffixDelta``) the way a segmented one is
/// applied: into a copy-on-write clone of the old file where the file system makes clones,
/// writing only the ``SegmentedDelta/cloneWindow`` windows that differ from the bytes
/// already there, and with a resume folder, built there with a checkpoint every few MB.
///
/// The three streams of a suffix delta cannot restart in the middle, so a resumed run
/// decodes them from the start again (the fast part) and compares the bytes before the
/// checkpoint with the partial file instead of writing them (the slow part on a phone's
/// flash); the whole file's SHA-256 is checked as for any payload, so a partial file
/// damaged since the checkpoint costs writes, never a wrong file.
extension PatchRun {
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

    /// Files from this size on are decoded in place (cloned, checkpointed); smaller ones are
    /// streamed into a new file as any payload is.
    package static let inPlaceSuffixSize: Int64 = 8 << 20

    /// Whether `target`'s suffix delta is decoded in place (``decodeSuffixInPlace``).
    static func decodesInPlace(_ target: PatchManifest.Target) -> Bool {
        target.size >= inPlaceSuffixSize && target.sha256 != nil
    }

    /// A digest naming one payload in a resume checkpoint: its encoding, length and first 64
    /// bytes (a suffix delta's stream lengths, a see-through payload's recipe header). The
    /// target's and the old file's digests name the rest (``ResumeSpot``,
    /// ``SegmentCheckpoint/source``), and the file's digest is checked whatever is taken
    /// over: a payload damaged further on, as in transit, keeps its checkpoint.
    func payloadIdentity(_ payload: PatchManifest.Payload) throws -> String {
        var hasher = SHA256()
        hasher.update(data: [payload.encoding.rawValue])
        withUnsafeBytes(of: payload.length.littleEndian) { hasher.update(bufferPointer: $0) }
        let head = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(min(payload.length, 64)), alignment: 16)
        defer { head.deallocate() }
        guard try patch.file.readChunk(into: head, at: payload.offset) == head.count else {
            throw PatchError.truncated(detail: "a payload ends early")
        }
        hasher.update(bufferPointer: UnsafeRawBufferPointer(head))
        return SHA256Hash(hasher.finalize()).hex
    }

    /// Rebuilds a large file from its suffix delta in place (see the extension's summary).
    mutating func decodeSuffixInPlace(
        _ payload: PatchManifest.Payload, source: PatchManifest.Source,
        target: PatchManifest.Target, destination: String
    ) throws {
        let oldPath = oldRoot + "/" + source.path
        guard let status = FileStatus.of(oldPath), status.kind == .file else { throw PatchError.sourceMissing(path: source.path) }
        let mapped = try MappedFile.source(oldPath, displayPath: source.path)
        let identity = try payloadIdentity(payload)
        let claimed = ResumeSpot.claim(in: resume, target: target, identity: identity)
        defer { withExtendedLifetime(claimed) {} }
        let building = claimed.map { $0.path + ".partial" } ?? destination
        var checkpoint = SegmentCheckpoint(identity: identity, source: source.sha256?.hex ?? source.path, segments: 0)
        let (output, taken, held, cloned) = try openInPlace(
            building, oldPath: oldPath, spot: claimed?.path, checkpoint: checkpoint, size: target.size)
        guard let form = payload.encoding.suffixForm else { throw PatchError.corrupt(detail: "\(target.path): not a suffix delta") }
        let compare = UnsafeMutableRawBufferPointer.allocate(byteCount: SegmentedDelta.cloneWindow, alignment: 16)
        defer { compare.deallocate() }
        var hasher = SHA256Hasher()
        var written: Int64 = 0
        var saved = taken
        let every = Self.rebuildCheckpointBytes(size: target.size)
        let start = done
        do {
            try SuffixDelta.decode(
                from: patch.file, offset: payload.offset, length: payload.length, old: mapped.bytes,
                targetSize: target.size, displayPath: target.path, form: form
            ) { chunk in
                hasher.update(chunk)
                if written < held {
                    try Self.writeChanged(chunk, at: written, to: output) { piece, at in
                        let part = UnsafeMutableRawBufferPointer(rebasing: compare[0..<piece.count])
                        return try output.readChunk(into: part, at: Int64(at)) == piece.count
                            && memcmp(part.baseAddress!, piece.baseAddress!, piece.count) == 0
                    }
                } else if cloned {
                    try Self.writeChanged(chunk, at: written, old: mapped.bytes, to: output)
                } else {
                    try output.writeAll(chunk, at: written)
                }
                written += Int64(chunk.count)
                done = start + written
                report(force: false)
                if let spot = claimed?.path, written - saved >= every {
                    try output.sync()
                    checkpoint.bytes = written
                    try checkpoint.write(spot + ".json")
                    saved = written
                }
            }
        } catch {
            // An old file other than the patch's is wrong on every retry: nothing is kept. A
            // payload that failed may be fetched again and resume from the checkpoint.
            guard let wrongOld = mismatch(of: source, bytes: mapped.bytes) else { throw error }
            removeSpot(claimed, building: building)
            throw wrongOld
        }
        try output.truncate(to: written)  // the old file, or an earlier partial one, may have been longer
        if durable { try output.sync() }
        let digest = hasher.finalize()
        let size = try output.size()
        guard digest == target.producedDigest, size == target.size else {
            // Done or wrong: a later run starts afresh, never from a checkpoint that led here.
            removeSpot(claimed, building: building)
            throw PatchError.outputMismatch(
                path: target.path, expectedSHA256: target.producedDigest.hex, foundSHA256: digest.hex,
                expectedSize: target.size, foundSize: size)
        }
        if let spot = claimed?.path {
            try FileSystem.rename(building, destination)
            FileSystem.remove(spot + ".json")
            FileSystem.remove(spot + ".lock")
        }
        decoded = digest
        done = start + target.size
    }

    /// Opens the file an in-place suffix delta builds at `building`: an earlier run's
    /// partial file where the checkpoint in `spot` vouches for its first bytes (`taken`,
    /// compared rather than written again), else a clone of the old file where the file
    /// system makes one, else an empty file. `held`: the bytes the file holds before this
    /// run writes.
    private mutating func openInPlace(
        _ building: String, oldPath: String, spot: String?, checkpoint: SegmentCheckpoint, size: Int64
    ) throws -> (output: SystemFile, taken: Int64, held: Int64, cloned: Bool) {
        if let spot, let saved = SegmentCheckpoint.read(spot + ".json"), saved.identity == checkpoint.identity,
            saved.source == checkpoint.source, let bytes = saved.bytes, bytes > 0, bytes <= size,
            let partial = FileStatus.of(building)?.size, partial >= bytes
        {
            let output = try SystemFile.openForUpdate(building)
            resumedBytes += bytes
            return (output, bytes, try output.size(), false)
        }
        FileSystem.remove(building)
        // A checkpoint of an earlier run that is not taken over must not vouch for this one.
        if let spot { FileSystem.remove(spot + ".json") }
        let cloned = FileSystem.cloneFile(oldPath, building)
        return (try cloned ? SystemFile.openForUpdate(building) : SystemFile.createOrTruncate(building), 0, 0, cloned)
    }

    /// Removes a failed in-place build: the file being built and its resume spot's files.
    private func removeSpot(_ spot: ResumeSpot?, building: String) {
        FileSystem.remove(building)
        guard let spot = spot?.path else { return }
        for suffix in [".json", ".partial", ".lock"] { FileSystem.remove(spot + suffix) }
    }
}
