package import Foundation
package import MapModel
import MapPlatform

/// Measures and cleans the data directory.
extension Store {
    /// Apparent bytes and files below `path` (not following symbolic links), counting each
    /// file once across every call that shares `seen`.
    static func measure(_ path: String, seen: inout Set<FileIdentity>) -> (bytes: Int64, files: Int) {
        guard let status = FileStatus.of(path) else { return (0, 0) }
        switch status.kind {
        case .file:
            return seen.insert(status.identity).inserted ? (status.size, 1) : (0, 0)
        case .directory:
            var total: (bytes: Int64, files: Int) = (0, 0)
            for name in (try? FileSystem.entryNames(path)) ?? [] {
                let part = measure(path + "/" + String(decoding: name, as: UTF8.self), seen: &seen)
                total.bytes += part.bytes
                total.files += part.files
            }
            return total
        default:
            return (0, 0)
        }
    }

    /// Bytes that removing `path` frees: files below it whose only name is there.
    static func freed(by path: String) -> Int64 {
        guard let status = FileStatus.of(path) else { return 0 }
        switch status.kind {
        case .file: return status.links <= 1 ? status.size : 0
        case .directory:
            return ((try? FileSystem.entryNames(path)) ?? []).reduce(0) {
                $0 + freed(by: path + "/" + String(decoding: $1, as: UTF8.self))
            }
        default: return 0
        }
    }

    /// What each installed group of `state` takes in the generation read, and the whole
    /// data directory, with hard-linked files counted once.
    package func usage(of state: InstalledState) -> DiskUsage {
        var seen = Set<FileIdentity>()
        var packages: [DiskUsage.Package] = []
        for (package, groups) in state.packages.sorted(by: { $0.key < $1.key }) {
            let measured = groups.keys.sorted().map { group in
                let part = Self.measure(groupDirectory(package: package, group: group).path, seen: &seen)
                return DiskUsage.Group(group, bytes: part.bytes, files: part.files)
            }
            packages.append(DiskUsage.Package(package, groups: measured))
        }
        let installed = packages.reduce(0) { $0 + $1.bytes }
        let total = installed + Self.measure(root.path, seen: &seen).bytes
        return DiskUsage(packages: packages, installedBytes: installed, otherBytes: total - installed, totalBytes: total)
    }

    /// Removes what no operation needs: generations neither live nor pinned, leftovers of
    /// interrupted operations, downloads untouched for `grace` seconds (a younger one may
    /// be another process's fetch in progress), and cached manifests other than
    /// `keepManifests` (the installed version's manifest and its parts) untouched for
    /// `grace` seconds. Call only while holding the write lock.
    package func collectGarbage(keepManifests: Set<String>, grace: TimeInterval) -> CleanupReport {
        var tally = CleanupTally(self)
        func remove(_ url: URL) { tally.remove(url) }
        for number in unusedGenerations() { remove(directory.generation(number)) }
        for name in FileSystem.names(in: directory.staging.path) {
            remove(directory.staging.appendingPathComponent(name))
        }
        let now = Date().timeIntervalSince1970
        func stale(_ url: URL) -> Bool { (FileStatus.of(url.path)?.modified ?? now) < now - grace }
        for name in FileSystem.names(in: directory.downloads.path) {
            let file = directory.downloads.appendingPathComponent(name)
            if stale(file) { remove(file) }
        }
        let manifests = directory.manifestCache
        for name in FileSystem.names(in: manifests.path) where !keepManifests.contains(name) {
            let file = manifests.appendingPathComponent(name)
            if stale(file) { remove(file) }
        }
        return tally.report
    }
}

/// Removals in a data directory, counted as a ``CleanupReport`` counts them: the path
/// removed (relative to the data directory) and the bytes it freed.
package struct CleanupTally {
    private let root: String
    private var removed: [String] = []
    private var freed: Int64 = 0

    /// A tally of removals under `store`'s data directory.
    package init(_ store: Store) { root = store.root.path }

    /// Removes the tree at `url` and counts it, if it went.
    package mutating func remove(_ url: URL) {
        let bytes = Store.freed(by: url.path)
        guard FileSystem.removeTree(url) else { return }
        freed = freed.plusSaturating(bytes)
        removed.append(String(url.path.dropFirst(root.count + 1)))
    }

    /// What was removed, in path order.
    package var report: CleanupReport { CleanupReport(removed: removed.sorted(), freedBytes: freed) }
}
