import Foundation
import MapModel
import MapPlatform

/// Applying see-through payloads (a deflate ``EncodingParts/View``): the old file is expanded
/// beside the new tree (its deflate streams inflated), the new file's expansion is decoded
/// against it, and the compressed file is rebuilt from that with the recipe, on up to
/// ``PatchRun/threads`` threads. The target's SHA-256 is checked as for any payload.
///
/// A segmented payload decodes its expansion segment by segment, each against a window of
/// the old expansion (memory: one segment, whatever the file's size; the old windows'
/// pages are dropped once used). With a resume folder it is built there with a checkpoint
/// after each expansion segment and after every few MB rebuilt, so an apply killed in the
/// middle continues where it stopped: finished segments are checked by their SHA-256 and
/// kept, the rebuilt bytes kept up to the last checkpoint. One deflate stream is rebuilt
/// whole or not at all (zlib cannot restart inside a stream).
extension PatchRun {
    /// Rebuilt bytes between two checkpoints of a resumable rebuild of a `size`-byte file:
    /// an eighth of it, between 1 and 8 MiB (each checkpoint costs an fsync).
    static func rebuildCheckpointBytes(size: Int64) -> Int64 { min(8 << 20, max(1 << 20, size / 8)) }
    /// The share of a see-through file's progress given to decoding its expansion; the
    /// rebuild takes the rest.
    package static let expansionShare = 0.2

    /// The old file's side of a see-through apply.
    private struct OldSide {
        var expansion: MappedFile
        var layout: [UInt8] = []
        var map = GatherMap.identity
    }

    /// Expands the old file (gathered first for a gathered payload) into `scratch.old`.
    private func expandOld(_ source: PatchManifest.Source, parts: EncodingParts, scratch: String) throws -> OldSide {
        var oldPath = oldRoot + "/" + source.path
        guard let status = FileStatus.of(oldPath), status.kind == .file else {
            throw PatchError.sourceMissing(path: source.path)
        }
        var map = GatherMap.identity
        if parts.view.gathers {
            map = SQLiteOverflow.map(of: oldPath)
            try map.gather(
                try SystemFile.openForReading(oldPath), size: status.size,
                into: try SystemFile.createOrTruncate(scratch + ".gathered"))
            oldPath = scratch + ".gathered"
        }
        let codec = parts.view.streamCodec ?? .deflate
        let streams = parts.view.scans ? codec.scan(in: oldPath) : DeflateStreams.find(in: oldPath)
        guard streams.count <= DeflateRecipe.maxSegments else {
            throw PatchError.beyondLimits(
                detail: "\(source.path) holds more than the \(DeflateRecipe.maxSegments) deflate streams a patch may expand")
        }
        let lengths = try DeflateRecipe.expand(oldPath, streams: streams, codec: codec, into: scratch + ".old")
        FileSystem.remove(scratch + ".gathered")  // expanded: the gathered copy is not read again
        return OldSide(
            expansion: try MappedFile.source(scratch + ".old", displayPath: source.path),
            layout: parts.view.scans ? DeflateRecipe.layout(of: streams, lengths: lengths) : [], map: map)
    }

    /// Rebuilds a file from a see-through payload of these `parts`. Without a `source` (a new
    /// file), the expansion was compressed on its own.
    mutating func decodeSeeThrough(
        _ payload: PatchManifest.Payload, parts: EncodingParts, source: PatchManifest.Source?,
        target: PatchManifest.Target, destination: String
    ) throws {
        let scratch = newRoot + ".expand-\(UUID().uuidString)"
        let begin = done
        defer {
            for suffix in [".old", ".new", ".gathered", ".rebuilt", ".expansion", ".partial"] { FileSystem.remove(scratch + suffix) }
        }
        // The recipe of a scanned payload is read against the old layout, and a gathered
        // one starts with a map read against the old map: their old side comes first.
        var old = try parts.view.scans ? source.map { try expandOld($0, parts: parts, scratch: scratch) } : nil
        var offset = payload.offset
        var newMap = GatherMap.identity
        if parts.view.gathers {
            let (map, mapLength) = try GatherMap.decodeFrame(
                from: patch.file, at: offset, within: payload.length, old: old?.map ?? .identity, size: target.size,
                displayPath: target.path)
            (newMap, offset) = (map, offset + mapLength)
        }
        let remaining = payload.length - (offset - payload.offset)
        let (recipe, recipeLength) =
            parts.view.scans
            ? try DeflateRecipe.decodeColumns(
                from: patch.file, at: offset, within: remaining, layout: old?.layout ?? [], codec: parts.view.streamCodec ?? .deflate,
                displayPath: target.path)
            : try DeflateRecipe.decode(from: patch.file, at: offset, within: remaining)
        old?.layout = []  // read: a layout costs 16 bytes a stream
        // The new expansion is held to the limit the publisher expanded the new file within,
        // before a byte of it is decoded to disk.
        let expansionLimit = DeflateRecipe.expansionLimit(ofFileOfSize: target.size)
        guard recipe.expandedSize <= expansionLimit else {
            throw PatchError.beyondLimits(
                detail: "an expansion of \(recipe.expandedSize) bytes for a \(target.size)-byte file, at most \(expansionLimit)")
        }
        let expansion = PatchManifest.Payload(
            encoding: parts.layout == .segmented ? .segmentedDelta : .delta, length: remaining - recipeLength,
            offset: offset + recipeLength)
        switch parts.layout {
        case .whole:
            try decodeWholeExpansion(
                expansion, parts: parts, recipe: recipe, old: &old, newMap: newMap, source: source, target: target,
                destination: destination, scratch: scratch)
        case .segmented:
            try decodeSegmentedExpansion(
                expansion, parts: parts, recipe: recipe, old: &old, newMap: newMap, source: source, target: target,
                destination: destination, scratch: scratch)
        }
        done = begin + target.size
    }

    /// Decodes a see-through file's expansion sent as a ``SegmentedDelta`` and rebuilds the
    /// file from it. With a resume folder the expansion is built there with a checkpoint
    /// after each segment, and the rebuild checkpointed every few MB.
    private mutating func decodeSegmentedExpansion(
        _ expansion: PatchManifest.Payload, parts: EncodingParts, recipe: DeflateRecipe, old: inout OldSide?,
        newMap: GatherMap, source: PatchManifest.Source?, target: PatchManifest.Target, destination: String, scratch: String
    ) throws {
        // The table names this cut; its checkpoint is found by it.
        let (table, _) = try SegmentedDelta.decode(
            from: patch.file, at: expansion.offset, within: expansion.length, targetSize: recipe.expandedSize,
            oldSize: old.map { Int64($0.expansion.bytes.count) } ?? .max, displayPath: target.path)
        let claimed = ResumeSpot.claim(in: resume, target: target, identity: table.identity)
        let spot = claimed?.path ?? scratch
        defer { withExtendedLifetime(claimed) {} }
        var checkpoint = SegmentCheckpoint(identity: table.identity, source: source?.sha256?.hex ?? source?.path ?? "", segments: 0)
        if claimed != nil, let saved = SegmentCheckpoint.read(spot + ".json"), saved.identity == checkpoint.identity,
            saved.source == checkpoint.source, (1...table.segments.count).contains(saved.segments),
            Self.finishedSegmentsAreIntact(spot + ".expansion", table: table, count: saved.segments)
        {
            checkpoint = saved
        }
        let start = done
        let expansionShare = Int64(Double(target.size) * Self.expansionShare)
        func expansionProgress(_ bytes: Int64) -> Int64 {
            recipe.expandedSize > 0 ? Int64(Double(expansionShare) * Double(bytes) / Double(recipe.expandedSize)) : 0
        }
        if checkpoint.segments < table.segments.count {
            if old == nil, let source { old = try expandOld(source, parts: parts, scratch: scratch) }
            let oldBytes = old?.expansion.bytes ?? UnsafeRawBufferPointer(start: nil, count: 0)
            // The windows are checked against the old expansion now that its size is known.
            let (checked, tableLength) = try SegmentedDelta.decode(
                from: patch.file, at: expansion.offset, within: expansion.length, targetSize: recipe.expandedSize,
                oldSize: Int64(oldBytes.count), displayPath: target.path)
            let first = checkpoint.segments
            let output = try first > 0 ? SystemFile.openForUpdate(spot + ".expansion") : SystemFile.createOrTruncate(spot + ".expansion")
            var written = checked.newOffset(of: first)
            try output.truncate(to: written)
            resumedBytes += expansionProgress(written)
            done = start + expansionProgress(written)
            do {
                try checked.decode(
                    from: patch.file, framesOffset: expansion.offset + tableLength, old: oldBytes, from: first,
                    displayPath: target.path,
                    output: { chunk in
                        try output.writeAll(chunk, at: written)
                        written += Int64(chunk.count)
                        done = start + expansionProgress(written)
                        report(force: false)
                    },
                    finished: { index in
                        let segment = checked.segments[index]
                        old?.expansion.release(Int(segment.oldOffset)..<Int(segment.oldOffset + segment.oldLength))
                        guard claimed != nil else { return }
                        try output.sync()
                        checkpoint.segments = index + 1
                        try checkpoint.write(spot + ".json")
                    })
            } catch {
                if let source, let mismatch = mismatch(of: source, bytes: nil) { throw mismatch }
                throw error
            }
            old = nil
            FileSystem.remove(scratch + ".old")
        } else {
            resumedBytes += expansionShare
        }
        done = start + expansionShare
        do {
            try rebuild(
                recipe, from: spot + ".expansion", into: spot + ".partial", target: target, gathered: parts.view.gathers,
                spot: claimed == nil ? nil : (spot, checkpoint))
        } catch let error as PatchError {
            // A recipe that does not rebuild the target's size is wrong whatever is taken
            // over: nothing of this spot is worth resuming (an I/O error keeps it).
            for suffix in [".json", ".expansion", ".partial"] { FileSystem.remove(spot + suffix) }
            throw error
        }
        try finish(target, rebuilt: spot + ".partial", gathered: parts.view.gathers ? newMap : nil, destination: destination, spot: claimed?.path)
    }

    /// Decodes a see-through file's expansion sent whole (one zstd frame or one suffix
    /// delta, not segments) and rebuilds the file from it. A file whose expansion is
    /// ``PatchRun/inPlaceSuffixSize`` or more is built in the resume folder, if any: the finished expansion is checkpointed with its SHA-256, then
    /// the rebuild every few MB, so a killed apply takes over the expansion (checked) and
    /// the rebuilt bytes; a smaller one is built in scratch files.
    private mutating func decodeWholeExpansion(
        _ expansion: PatchManifest.Payload, parts: EncodingParts, recipe: DeflateRecipe, old: inout OldSide?,
        newMap: GatherMap, source: PatchManifest.Source?, target: PatchManifest.Target, destination: String, scratch: String
    ) throws {
        let begin = done
        let identity = try payloadIdentity(expansion)
        let claimed =
            recipe.expandedSize >= Self.inPlaceSuffixSize ? ResumeSpot.claim(in: resume, target: target, identity: identity) : nil
        defer { withExtendedLifetime(claimed) {} }
        let expansionPath = claimed.map { $0.path + ".expansion" } ?? scratch + ".new"
        var checkpoint = SegmentCheckpoint(identity: identity, source: source?.sha256?.hex ?? source?.path ?? "", segments: 0)
        if let spot = claimed?.path, let saved = SegmentCheckpoint.read(spot + ".json"), saved.identity == identity,
            saved.source == checkpoint.source, saved.segments == 1, let digest = saved.expansionSHA256,
            (try? FileHashing.hash(ofFile: expansionPath))?.0.hex == digest
        {
            checkpoint = saved
            resumedBytes += Int64(Double(target.size) * Self.expansionShare)
        } else {
            if old == nil, let source { old = try expandOld(source, parts: parts, scratch: scratch) }
            var digest: SHA256Hash?
            do {
                if parts.codec == .zstd, recipe.expandedSize > mappedAbove,
                    let (frame, output) = try mappedFrame(expansion, size: recipe.expandedSize, into: expansionPath, displayPath: target.path)
                {
                    digest = try decodeMapped(
                        frame, prefix: old?.expansion.bytes, into: output, digest: claimed != nil, sync: claimed != nil,
                        displayPath: target.path)
                } else {
                    digest = try decodeStreamed(
                        expansion, parts: parts, old: old, source: source, size: recipe.expandedSize, into: expansionPath,
                        digest: claimed != nil, displayPath: target.path)
                }
            } catch let error as PatchError {
                // Nothing of a half-decoded expansion is taken over (it is checkpointed only when
                // whole): it is not kept, as it may be several times the file's size.
                if let spot = claimed?.path {
                    for suffix in [".json", ".expansion", ".partial", ".lock"] { FileSystem.remove(spot + suffix) }
                }
                throw error
            }
            if let spot = claimed?.path {
                checkpoint.segments = 1
                checkpoint.expansionSHA256 = digest?.hex
                try checkpoint.write(spot + ".json")
            }
        }
        old = nil  // the old expansion is not read again: its mapping goes before the rebuild
        FileSystem.remove(scratch + ".old")
        done = begin + Int64(Double(target.size) * Self.expansionShare)
        let rebuilt = claimed.map { $0.path + ".partial" } ?? (parts.view.gathers ? scratch + ".rebuilt" : destination)
        do {
            try rebuild(
                recipe, from: expansionPath, into: rebuilt, target: target, gathered: parts.view.gathers,
                spot: claimed.map { ($0.path, checkpoint) })
        } catch let error as PatchError {
            // A recipe that does not rebuild the target's size is wrong whatever is taken over.
            if let spot = claimed?.path {
                for suffix in [".json", ".expansion", ".partial", ".lock"] { FileSystem.remove(spot + suffix) }
            }
            FileSystem.remove(rebuilt)
            throw error
        } catch {
            if claimed == nil { FileSystem.remove(rebuilt) }
            throw error
        }
        try finish(target, rebuilt: rebuilt, gathered: parts.view.gathers ? newMap : nil, destination: destination, spot: claimed?.path)
    }

    /// Decodes a whole expansion (one zstd frame, or a suffix delta against the old
    /// expansion) into `path` chunk by chunk. Returns its SHA-256 when `digest` asks for it
    /// (and then flushes it, for a checkpoint).
    private mutating func decodeStreamed(
        _ expansion: PatchManifest.Payload, parts: EncodingParts, old: OldSide?, source: PatchManifest.Source?, size: Int64,
        into path: String, digest: Bool, displayPath: String
    ) throws -> SHA256Hash? {
        let file = try SystemFile.createOrTruncate(path)
        var hasher = SHA256Hasher()
        let write = { (chunk: UnsafeRawBufferPointer) throws in
            try file.writeAll(chunk)
            if digest { hasher.update(chunk) }
        }
        if let form = parts.codec.suffixForm {
            // Streamed against the mapped old expansion: no window besides it.
            guard let old, let source else {
                throw PatchError.corrupt(detail: "a suffix delta for \(displayPath) without its old file")
            }
            do {
                try SuffixDelta.decode(
                    from: patch.file, offset: expansion.offset, length: expansion.length, old: old.expansion.bytes,
                    targetSize: size, displayPath: displayPath, form: form, output: write)
            } catch {
                // Steps out of range may mean another old file than the patch was made from.
                throw mismatch(of: source, bytes: nil) ?? error
            }
        } else {
            try ZstdDelta.decodeFrame(
                from: patch.file, offset: expansion.offset, length: expansion.length,
                prefix: old?.expansion.bytes, expectedSize: size, displayPath: displayPath, output: write)
        }
        guard digest else { return nil }
        try file.sync()
        return hasher.finalize()
    }

    /// Rebuilds the compressed (or gathered) file from the expansion at `expansionPath`
    /// into `path`. With a `spot` (its path and checkpoint), continues after the rebuilt
    /// bytes the checkpoint vouches for and checkpoints every few MB; without one, writes
    /// `path` from the start.
    private mutating func rebuild(
        _ recipe: DeflateRecipe, from expansionPath: String, into path: String, target: PatchManifest.Target,
        gathered: Bool, spot: (path: String, checkpoint: SegmentCheckpoint)?
    ) throws {
        let expansion = try SystemFile.openForReading(expansionPath)
        var position = DeflateRecipe.Position.start
        // The checkpoint names the digest of the bytes rebuilt before it: a partial file
        // that does not hash to it (damaged, or a checkpoint that lies) starts over.
        var hasher = spot.map { _ in SHA256Hasher() }
        if let saved = spot?.checkpoint.rebuilt, let digest = spot?.checkpoint.rebuiltSHA256,
            saved.segments <= recipe.segments.count, saved.output <= target.size, saved.expanded <= recipe.expandedSize,
            let prefix = Self.hashPrefix(of: path, length: saved.output), prefix.finalize().hex == digest
        {
            (position, hasher) = (saved, prefix)
        }
        let output = try position.output > 0 ? SystemFile.openForUpdate(path) : SystemFile.createOrTruncate(path)
        try output.truncate(to: position.output)
        try output.seek(to: position.output)
        let start = done
        let share = Double(target.size) * (1 - Self.expansionShare)
        func progress(_ bytes: Int64) -> Int64 { target.size > 0 ? Int64(share * Double(bytes) / Double(target.size)) : 0 }
        resumedBytes += progress(position.output)
        var written = position.output
        var saved = position.output
        let peak = try recipe.rebuild(
            from: expansion, threads: threads, at: position,
            output: { chunk in
                written += Int64(chunk.count)
                guard written <= target.size else {
                    throw PatchError.corrupt(detail: "the rebuilt bytes of \(target.path) grow past the target's size")
                }
                try output.writeAll(chunk)
                hasher?.update(chunk)
                done = start + progress(written)
                report(force: false)
            },
            finished: { at in
                guard var checkpoint = spot?.checkpoint, let path = spot?.path,
                    at.output - saved >= Self.rebuildCheckpointBytes(size: target.size)
                else { return }
                try output.sync()
                checkpoint.rebuilt = at
                checkpoint.rebuiltSHA256 = hasher?.finalize().hex
                try checkpoint.write(path + ".json")
                saved = at.output
            })
        peakRebuildThreads = max(peakRebuildThreads, peak)
        guard written == target.size else {
            throw PatchError.outputMismatch(
                path: target.path, expectedSHA256: target.producedDigest.hex, foundSHA256: "unknown",
                expectedSize: target.size, foundSize: written)
        }
        if durable { try output.sync() }
    }

    /// A hasher fed the first `length` bytes of the file at `path`; `nil` when it is shorter.
    private static func hashPrefix(of path: String, length: Int64) -> SHA256Hasher? {
        guard let file = try? SystemFile.openForReading(path) else { return nil }
        var hasher = SHA256Hasher()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        do {
            try file.copy(from: 0, length: length, buffer: buffer) { hasher.update($0) }
        } catch {
            return nil
        }
        return hasher
    }

    /// Checks the rebuilt file against the target (scattering it into file order first
    /// for a gathered payload) and puts it at `destination`; removes the resume spot's
    /// files once done.
    private mutating func finish(
        _ target: PatchManifest.Target, rebuilt: String, gathered map: GatherMap?, destination: String, spot: String?
    ) throws {
        let hash: SHA256Hash
        let size: Int64
        if let map {
            let writer = try HashingFileWriter(path: destination, displayPath: target.path, limit: target.size)
            try map.scatter(try SystemFile.openForReading(rebuilt), size: target.size) { try writer.write($0) }
            (hash, size) = try writer.finish(sync: durable)
            FileSystem.remove(rebuilt)
        } else {
            (hash, size) = try FileHashing.hash(ofFile: rebuilt)
            if rebuilt != destination { try FileSystem.rename(rebuilt, destination) }
        }
        // Done or wrong: either way a later run starts afresh, never from a checkpoint
        // that led to a wrong file.
        if let spot {
            for suffix in [".json", ".expansion", ".partial", ".lock"] { FileSystem.remove(spot + suffix) }
        }
        guard hash == target.producedDigest, size == target.size else {
            FileSystem.remove(destination)
            throw PatchError.outputMismatch(
                path: target.path, expectedSHA256: target.producedDigest.hex,
                foundSHA256: hash.hex, expectedSize: target.size, foundSize: size)
        }
    }
}

/// The place in the resume folder where one large output is built, held under its lock
/// while this run builds it: `<resume>/apply-<target digest>-<table identity>` with the
/// suffixes `.lock`, `.json` (the checkpoint), `.partial` and, for a see-through file,
/// `.expansion`.
struct ResumeSpot {
    /// The path the spot's files begin with.
    let path: String
    /// Held while this run builds there.
    let lock: FileLock

    /// The spot for `target` cut as `identity`, or `nil` without a resume folder or when
    /// another run holds it (which then builds in place instead).
    static func claim(in resume: String?, target: PatchManifest.Target, identity: String) -> ResumeSpot? {
        guard let resume else { return nil }
        let path = "\(resume)/\(PatchRun.resumePrefix)\(target.producedDigest.hex.prefix(24))-\(identity.prefix(24))"
        guard let lock = try? FileLock.attempt(path + ".lock", .exclusive) else { return nil }
        return ResumeSpot(path: path, lock: lock)
    }
}
