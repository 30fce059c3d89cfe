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
    /// The changed files' payloads are chosen on up to ``PatchOptions/fileJobs`` threads,
    /// then written in the new tree's order: the patch's bytes are the same whatever the
    /// number of threads.
    static func build(from old: TreeScan, to new: TreeScan, output: URL, options: PatchOptions) throws -> PatchStats {
        let work = (options.workDirectory ?? FileManager.default.temporaryDirectory)
            .appendingPathComponent("patchbuild-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let spoolPath = work.path + "/payloads"
        let spool = try SystemFile.create(spoolPath)

        var plan = PlanState(old: old)
        let slots = Slot.plan(old: old, new: new, options: options, plan: plan)
        let pending = slots.compactMap(\.pending)
        var chosen = try Chosen.payloads(of: pending, old: old, new: new, options: options, work: work.path)[...]
        var targets: [PatchManifest.Target] = []
        var stats = PatchStats()
        for (file, slot) in zip(new.files, slots) {
            var entry = PatchStats.File(
                path: file.path, operation: .unchanged, size: file.size, source: nil,
                encoding: nil, payloadBytes: 0, tried: [:])
            let origin: PatchManifest.Origin
            switch slot {
            case .unchanged:
                origin = .unchanged
            case .copy(let source):
                origin = .copy(source: plan.sourceIndex(source))
                entry.operation = .copy
                entry.source = source.path
            case .choose(let item):
                let result = chosen.removeFirst()
                origin = try result.append(item, to: spool, plan: &plan, entry: &entry)
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
                    payloadBytes: 0, tried: [:]))
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
}

/// The source table under construction and the old files indexed by content.
struct PlanState {
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
