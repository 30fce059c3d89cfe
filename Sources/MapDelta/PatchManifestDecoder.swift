package import MapModel
import MapPlatform

/// Parses the binary manifest (see ``PatchFormat``) and checks that it is self-consistent:
/// safe and unique paths, indices in range, encodings that fit their operations, and
/// payloads that exactly fill the rest of the container.
package enum PatchManifestDecoder {
    /// The manifest in `bytes` (manifest form `form`, see ``PatchFormat``), with payload
    /// offsets laid out from `payloadStart`; the payloads must end exactly at `containerSize`.
    /// Every count is held to the trees it joins before anything is allocated for it: at
    /// most `oldFiles` sources and deletions, targets within `limits` (their number, and
    /// their sizes summed as they are read), else ``PatchError/beyondLimits(detail:)``.
    package static func decode(
        _ bytes: [UInt8], form: Int = PatchFormat.currentForm, payloadStart: Int64, containerSize: Int64,
        limits: TreeLimits = .siteMaximum, oldFiles: Int = SiteLimits.files
    ) throws -> PatchManifest {
        var reader = ByteReader(bytes)
        let lean = form >= 2
        let listsChangesOnly = form >= 3
        let treeHash = listsChangesOnly ? try digest(&reader, of: "the tree") : lean ? try reader.sha256() : nil
        var sources: [PatchManifest.Source] = []
        let sourceCount = try within(oldFiles, try reader.count(minimumEntrySize: lean ? 2 : 34), "old files read")
        sources.reserveCapacity(sourceCount)
        for _ in 0..<sourceCount {
            let path = try reader.string()
            try PatchPath.validate(path)
            sources.append(.init(path: path, sha256: lean ? try digest(&reader, of: path) : try reader.sha256()))
        }

        var targets: [PatchManifest.Target] = []
        let targetCount = try within(limits.files, try reader.count(minimumEntrySize: 4), "files")
        targets.reserveCapacity(targetCount)
        var cursor = payloadStart
        var targetBytes: Int64 = 0
        for _ in 0..<targetCount {
            let path = try reader.string()
            try PatchPath.validate(path)
            let size = try reader.varint()
            targetBytes = targetBytes.plusSaturating(size)
            guard targetBytes <= limits.bytes else {
                throw PatchError.beyondLimits(detail: "its files reach past the \(limits.bytes) bytes declared, at \(PatchError.quoted(path))")
            }
            let (sha, origin) = try origin(
                &reader, of: path, size: size, sources: sources, form: form, cursor: &cursor, containerSize: containerSize)
            if let payload = origin.payload, payload.encoding == .stored, payload.length != size {
                throw PatchError.corrupt(detail: "stored payload of \(path) is \(payload.length) bytes, file is \(size)")
            }
            targets.append(.init(path: path, size: size, sha256: sha, origin: origin))
        }

        var deletions: [String] = []
        let deletionCount = try within(oldFiles, try reader.count(minimumEntrySize: 2), "old files deleted")
        deletions.reserveCapacity(deletionCount)
        for _ in 0..<deletionCount {
            let path = try reader.string()
            try PatchPath.validate(path)
            deletions.append(path)
        }
        guard reader.remaining == 0 else { throw PatchError.corrupt(detail: "bytes after the manifest") }
        if cursor < containerSize {
            throw PatchError.corrupt(detail: "\(containerSize - cursor) bytes after the last payload")
        }
        try checkPaths(targets: targets, deletions: deletions)
        if listsChangesOnly, zip(targets, targets.dropFirst()).contains(where: { !$0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }) {
            throw PatchError.corrupt(detail: "targets out of path order")
        }
        return PatchManifest(sources: sources, targets: targets, deletions: deletions, treeHash: treeHash, keepsUnlisted: listsChangesOnly)
    }

    /// A digest flag (0: none, 1: a SHA-256 follows) and its digest.
    private static func digest(_ reader: inout ByteReader, of path: String) throws -> SHA256Hash? {
        switch try reader.byte() {
        case 0: return nil
        case 1: return try reader.sha256()
        case let flag: throw PatchError.corrupt(detail: "\(path) has digest flag \(flag)")
        }
    }

    /// How the target at `path` (`size` bytes) is produced, and its digest: its operation,
    /// its old file (an index into `sources`) and its payload, which begins at `cursor`
    /// (moved past it) and ends within the container.
    private static func origin(
        _ reader: inout ByteReader, of path: String, size: Int64, sources: [PatchManifest.Source], form: Int,
        cursor: inout Int64, containerSize: Int64
    ) throws -> (sha: SHA256Hash?, origin: PatchManifest.Origin) {
        let (lean, listsChangesOnly) = (form >= 2, form >= 3)
        // A produced file's digest: a bare hash before form 3, optional from it.
        func produced() throws -> SHA256Hash? {
            listsChangesOnly ? try digest(&reader, of: path) : try reader.sha256()
        }
        let sha: SHA256Hash?
        let origin: PatchManifest.Origin
        switch try reader.byte() {
        case PatchFormat.kindUnchanged where !listsChangesOnly:
            sha = lean ? nil : try reader.sha256()
            origin = .unchanged
        case PatchFormat.kindCopy:
            let source = try reader.index(below: sources.count)
            sha = sources[source].sha256
            origin = .copy(source: source)
        case PatchFormat.kindAdd:
            sha = try produced()
            let payload = try readPayload(&reader, cursor: &cursor, end: containerSize)
            guard payload.encoding.parts.sendsNewFiles else {
                throw PatchError.corrupt(detail: "add of \(path) uses a delta payload")
            }
            try checkDigest(sha, of: path, size: size, payload: payload)
            origin = .add(payload)
        case PatchFormat.kindPatch:
            sha = try produced()
            let source = try reader.index(below: sources.count)
            let payload = try readPayload(&reader, cursor: &cursor, end: containerSize)
            guard payload.encoding.isDelta else {
                throw PatchError.corrupt(detail: "patch of \(path) has a non-delta payload")
            }
            try checkDigest(sha, of: path, size: size, payload: payload)
            origin = .patch(source: source, payload)
        case let kind:
            throw PatchError.corrupt(detail: "unknown operation \(kind) for \(path)")
        }
        return (sha, origin)
    }

    /// `count`, when it is at most `limit` (`what` names the count in the refusal).
    private static func within(_ limit: Int, _ count: Int, _ what: String) throws -> Int {
        guard count <= limit else {
            throw PatchError.beyondLimits(detail: "\(count) \(what), at most \(limit) declared")
        }
        return count
    }

    /// A produced file may lack its digest (form 3) only when it is small and its payload is
    /// decoded as one stream (``PatchEncoding/streamsWhole``): the digest names the other
    /// files' resume checkpoints.
    private static func checkDigest(_ digest: SHA256Hash?, of path: String, size: Int64, payload: PatchManifest.Payload) throws {
        guard digest == nil else { return }
        if size >= PatchFormat.sourceDigestFrom || !payload.encoding.streamsWhole {
            throw PatchError.corrupt(detail: "\(path) (\(payload.encoding), \(size) bytes) has no digest")
        }
    }

    /// The manifest of a form-3 patch (``PatchManifest/keepsUnlisted``) with the files of
    /// the old tree it does not name (`oldFiles`, relative paths and sizes) added as
    /// unchanged targets, every target in path-byte order (the order cross-file references
    /// count in); any other manifest as it is. The paths are checked again as a whole, and
    /// the whole tree against `limits`.
    package static func keepingUnlisted(
        _ manifest: PatchManifest, oldFiles: [(path: String, size: Int64)], limits: TreeLimits = .siteMaximum
    ) throws -> PatchManifest {
        guard manifest.keepsUnlisted else { return manifest }
        let named = Set(manifest.targets.map { PathKey($0.path) } + manifest.deletions.map { PathKey($0) })
        var expanded = manifest
        expanded.keepsUnlisted = false
        expanded.targets += oldFiles.filter { !named.contains(PathKey($0.path)) }.map {
            PatchManifest.Target(path: $0.path, size: $0.size, sha256: nil, origin: .unchanged)
        }
        _ = try within(limits.files, expanded.targets.count, "files")
        let bytes = expanded.targets.saturatingSum(\.size)
        guard bytes <= limits.bytes else {
            throw PatchError.beyondLimits(detail: "its files and the ones it keeps make \(bytes) bytes, at most \(limits.bytes) declared")
        }
        expanded.targets.sort { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        try checkPaths(targets: expanded.targets, deletions: expanded.deletions)
        return expanded
    }

    /// Reads an encoding and a length and places the payload at `cursor`, which must stay
    /// within the container.
    private static func readPayload(
        _ reader: inout ByteReader, cursor: inout Int64,
        end: Int64
    ) throws -> PatchManifest.Payload {
        guard let encoding = PatchEncoding(rawValue: try reader.byte()) else {
            throw PatchError.corrupt(detail: "unknown payload encoding")
        }
        let length = try reader.varint()
        guard length <= end - cursor else {
            throw PatchError.truncated(detail: "payloads need \(length) more bytes at offset \(cursor), container has \(end - cursor)")
        }
        defer { cursor += length }
        return .init(encoding: encoding, length: length, offset: cursor)
    }

    /// Target paths must be unique, no target may sit below another target (a file cannot
    /// be a directory), and a deleted path cannot also be a target.
    private static func checkPaths(targets: [PatchManifest.Target], deletions: [String]) throws {
        var files = Set<PathKey>()
        files.reserveCapacity(targets.count)
        for target in targets {
            guard files.insert(PathKey(target.path)).inserted else {
                throw PatchError.corrupt(detail: "target \(target.path) listed twice")
            }
        }
        for target in targets {
            for dir in RelativePath.ancestors(of: target.path) where files.contains(PathKey(dir)) {
                throw PatchError.corrupt(detail: "target \(target.path) lies below file \(dir)")
            }
        }
        for path in deletions where files.contains(PathKey(path)) {
            throw PatchError.corrupt(detail: "\(path) is both deleted and a target")
        }
    }
}
