package import Foundation
package import MapModel
import MapPlatform
import SystemPackage

/// The next generation while it is built in `staging/`. Nothing it does is visible to
/// readers until ``commit(_:)``; dropping it without committing changes nothing (the
/// next writer's ``Store/recover()`` removes the leftovers).
package struct GenerationBuilder: Sendable {
    package let store: Store
    /// The generation number it will have.
    package let number: Int
    /// Where it is built.
    package let directory: URL

    /// The folder for a group's files in the new generation, created empty.
    package func makeGroupDirectory(package: String, group: String) throws(MapLoaderError) -> URL {
        let folder = directory.appendingPathComponent(package).appendingPathComponent(group)
        do {
            FileSystem.removeTree(folder)
            try FileSystem.makeDirectories(folder)
        } catch {
            throw .storage(path: folder.path, error)
        }
        return folder
    }

    /// Carries an installed group over from the live generation by hard-linking its files
    /// (no bytes copied) and its file index.
    package func carryOver(package: String, group: String) throws(MapLoaderError) {
        let source = store.groupDirectory(package: package, group: group)
        let target = try makeGroupDirectory(package: package, group: group)
        do {
            // Each folder of the group is made once (a group of tiles holds hundreds of
            // files in a few folders), not checked from the root for every file.
            var made: Set<String> = []
            for file in try FileTree.files(in: source) {
                if let slash = file.path.lastIndex(of: "/") {
                    try FileSystem.makeDirectories(String(file.path[..<slash]), under: target.path, made: &made)
                }
                try Self.put(source.appendingPathComponent(file.path), at: target.appendingPathComponent(file.path))
            }
            let index = DataDirectory.indexPath(package: package, group: group)
            try Self.link(store.live.appendingPathComponent(index), to: directory.appendingPathComponent(index))
        } catch {
            throw .storage(path: target.path, error)
        }
    }

    /// Records the verified files of a group written into this generation.
    package func writeIndex(_ entries: [FileEntry], package: String, group: String) throws(MapLoaderError) {
        let file = directory.appendingPathComponent(DataDirectory.indexPath(package: package, group: group))
        do {
            try FileSystem.makeDirectories(file.deletingLastPathComponent())
            try FileSystem.write(TreeHash.sorted(entries).jsonData(pretty: false), to: file)
        } catch {
            throw .storage(path: file.path, error)
        }
    }

    /// Makes this generation current: writes `state`, flushes every file to disk, moves
    /// the folder into `generations/`, and switches `current` with one rename. Then every
    /// generation that is neither live nor pinned by a reader is removed. Call only while
    /// holding the write lock.
    package func commit(_ state: InstalledState) throws(MapLoaderError) {
        var state = state
        state.generation = number
        state.committed = Date()
        let final = store.directory.generation(number)
        do {
            try FileSystem.write(state.jsonData(), to: DataDirectory.stateFile(in: directory))
            try FileSystem.syncAll(under: directory.path)
            try FileSystem.rename(directory.path, final.path)
            try FileSystem.sync(store.directory.generations.path)
        } catch {
            throw .storage(path: store.root.path, error)
        }
        try store.switchCurrent(to: number)
        store.removeUnusedGenerations()
    }

    /// Puts `source`'s file at `target` without copying where the file system allows: a hard
    /// link, else (another device, no hard links, the link limit) a copy-on-write clone,
    /// else a copy.
    package static func link(_ source: URL, to target: URL) throws {
        try FileSystem.makeDirectories(target.deletingLastPathComponent())
        try put(source, at: target)
    }

    /// ``link(_:to:)`` into a folder that exists.
    private static func put(_ source: URL, at target: URL) throws {
        if case .failure(let error) = Result(catching: { () throws(SystemError) in try FileSystem.link(source.path, target.path) }) {
            guard error.isUnsupported || [Errno.improperLink, .tooManyLinks].contains(error.errno) else { throw error }
            if FileSystem.cloneFile(source.path, target.path) { return }
            try FileSystem.copyFile(source.path, target.path)
        }
    }
}
