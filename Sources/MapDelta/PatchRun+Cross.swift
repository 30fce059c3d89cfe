import Foundation
import MapModel
import MapPlatform

/// Applying cross-file deltas: payloads that read other files of the group besides their own old file.
extension PatchRun {
    /// Decodes a cross-file delta: the referenced old and new files are joined into one
    /// temporary prefix beside the new tree (mapped, not read into memory), and the payload
    /// after the references (a `frame`: a zstd frame or an LZMA2 stream) is decoded against
    /// it. The output's SHA-256 is checked as for any payload; when it fails, the old files
    /// read are checked to say which was wrong. A `whole` frame (``PatchEncoding/wholeCrossDelta``)
    /// may read more references, and one of more than ``mappedAbove`` bytes is decoded in
    /// one pass into the new file, mapped, where its blocks can be reserved.
    mutating func decodeCross(
        _ payload: PatchManifest.Payload, source: PatchManifest.Source,
        target: PatchManifest.Target, destination: String, frame encoding: PatchEncoding, whole: Bool = false
    ) throws {
        let (references, headerLength) = try CrossReferences.decode(
            from: patch.file, at: payload.offset,
            within: payload.length, displayPath: target.path)
        let paths = try referencedPaths(references, target: target)
        let total = paths.reduce(Int64(0)) { $0 + (FileStatus.of($1)?.size ?? 0) }
        let limit = whole ? CrossReferences.maxWholePrefixBytes : CrossReferences.maxPrefixBytes
        guard !whole || target.size <= CrossReferences.maxWholeFileBytes else {
            throw PatchError.corrupt(detail: "\(target.path) is one cross-file frame of more than \(CrossReferences.maxWholeFileBytes >> 20) MiB")
        }
        guard total <= limit else {
            throw PatchError.corrupt(detail: "\(target.path) refers to more than \(limit >> 20) MiB of files")
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
            let mapped = try whole && decodeMapped(frame, prefix: prefix.bytes, target: target, destination: destination)
            if !mapped {
                try decode(
                    frame, prefix: prefix.bytes, windowCover: Int64(prefix.bytes.count) + target.size,
                    target: target, destination: destination)
            }
        } catch {
            for case .old(let index) in references.references {
                if let mismatch = mismatch(of: patch.manifest.sources[index], bytes: nil) { throw mismatch }
            }
            throw error
        }
    }

    /// The full paths of the files `references` names for `target`, each a regular file:
    /// old files of the patch's sources, new files produced before this one; none twice.
    func referencedPaths(_ references: CrossReferences, target: PatchManifest.Target) throws -> [String] {
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
}
