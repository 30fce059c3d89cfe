import Foundation
package import MapModel
import MapPlatform

/// Compares installed files with what the store recorded for them.
package enum StoreCheck {
    /// A group whose files differ from its record, and how.
    package struct Finding: Sendable, Hashable {
        package var key: GroupKey
        package var detail: String
    }

    /// Cheap check by `stat` only (the walk's, one per file): missing, extra or resized
    /// files, or files modified after the generation was committed. Used by `list` and
    /// before planning.
    package static func quick(_ store: Store, _ state: InstalledState) -> [Finding] {
        check(store, state) { _, entry, status in
            status.modified > state.committed.timeIntervalSince1970 + 1 ? "\(entry.path) was modified after installation" : nil
        }
    }

    /// Full check: re-hashes every file (streamed).
    package static func full(_ store: Store, _ state: InstalledState, onGroup: (Int, GroupKey) -> Void = { _, _ in }) -> [Finding] {
        check(store, state, onGroup: onGroup) { url, entry, _ in
            guard let hash = try? FileHashing.sha256(ofFileAt: url) else { return "\(entry.path) cannot be read" }
            return hash.hex == entry.sha256 ? nil : "\(entry.path) has different content"
        }
    }

    private static func check(
        _ store: Store, _ state: InstalledState, onGroup: (Int, GroupKey) -> Void = { _, _ in },
        file: (URL, FileEntry, FileStatus) -> String?
    ) -> [Finding] {
        var findings: [Finding] = []
        var checked = 0
        for (package, groups) in state.packages.sorted(by: { $0.key < $1.key }) {
            for group in groups.keys.sorted() {
                let key = GroupKey(package, group)
                onGroup(checked, key)
                checked += 1
                let folder = store.groupDirectory(package: package, group: group)
                guard let index = try? store.index(package: package, group: group) else {
                    findings.append(Finding(key: key, detail: "its file index is missing"))
                    continue
                }
                guard let present = try? FileTree.filesWithStatus(in: folder.path) else {
                    findings.append(Finding(key: key, detail: "its folder is missing or holds a link or device"))
                    continue
                }
                let found = Dictionary(present.map { (PathKey($0.path), $0.status) }, uniquingKeysWith: { a, _ in a })
                let indexed = Set(index.map { PathKey($0.path) })
                if let extra = present.first(where: { !indexed.contains(PathKey($0.path)) }) {
                    findings.append(Finding(key: key, detail: "\(extra.path) was added"))
                    continue
                }
                var problem: String?
                for entry in index {
                    guard let status = found[PathKey(entry.path)] else {
                        problem = "\(entry.path) is missing"
                        break
                    }
                    guard status.size == entry.size else {
                        problem = "\(entry.path) changed size"
                        break
                    }
                    if let detail = file(folder.appendingPathComponent(entry.path), entry, status) {
                        problem = detail
                        break
                    }
                }
                if let problem { findings.append(Finding(key: key, detail: problem)) }
            }
        }
        return findings
    }
}
