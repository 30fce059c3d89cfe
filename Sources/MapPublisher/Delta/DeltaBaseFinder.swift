import MapDelta
import MapModel
import MapPlatform

/// Picks an old file to delta a new path against when the old tree has no file at that
/// path: first an old file with the same name (closest size), else one with the same
/// extension and a size within a factor of two (closest size). Old paths that are gone
/// from the new tree are preferred, since those are what renamed files look like.
struct DeltaBaseFinder {
    private var byName: [String: [TreeScan.File]] = [:]
    private var byExtension: [String: [TreeScan.File]] = [:]
    private let goneFromNew: Set<PathKey>

    /// An index of `old`; `newPaths` tells which old paths disappear.
    init(old: [TreeScan.File], newPaths: Set<PathKey>) {
        goneFromNew = Set(old.map { PathKey($0.path) }.filter { !newPaths.contains($0) })
        for file in old where file.size > 0 {
            byName[Self.name(of: file.path), default: []].append(file)
            if let ext = Self.pathExtension(of: file.path) { byExtension[ext, default: []].append(file) }
        }
        for key in byExtension.keys { byExtension[key]!.sort { $0.size < $1.size } }
    }

    /// The best base for `file`, or nil.
    func base(for file: TreeScan.File) -> TreeScan.File? {
        if let same = byName[Self.name(of: file.path)], let best = closest(in: same, to: file.size, window: nil) {
            return best
        }
        guard let ext = Self.pathExtension(of: file.path), let sameExt = byExtension[ext] else { return nil }
        return closest(in: sameExt, to: file.size, window: 2)
    }

    /// The candidate of closest size, preferring ones gone from the new tree; with a
    /// `window`, sizes must lie within that factor of `size`.
    private func closest(in candidates: [TreeScan.File], to size: Int64, window: Int64?) -> TreeScan.File? {
        func fits(_ c: TreeScan.File) -> Bool {
            guard let window else { return true }
            return c.size <= size * window && c.size * window >= size
        }
        func distance(_ c: TreeScan.File) -> Int64 { abs(c.size - size) }
        let fitting = candidates.lazy.filter(fits)
        let gone = fitting.filter { goneFromNew.contains(PathKey($0.path)) }
        return gone.min { distance($0) < distance($1) } ?? fitting.min { distance($0) < distance($1) }
    }

    /// The last path segment.
    static func name(of path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    /// The extension of the last segment (after its last dot), if any.
    static func pathExtension(of path: String) -> String? {
        let name = name(of: path)
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        return String(name[name.index(after: dot)...])
    }
}
