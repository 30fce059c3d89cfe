import Foundation
package import MapPlatform

/// Which generation is live: the data directory's `current`, and the one way it changes.
///
/// Where the file system has symbolic links, `current` is a link to `generations/<n>`, so
/// `current/<package>/<group>/…` reads the live files. Where it has none (FAT and exFAT
/// cards and sticks), `current` is a small file whose text is `generations/<n>`, which
/// readers resolve (``Store/live``, snapshots, `maploader pin`). Either way a switch makes
/// the new pointer as `current.<n>`, flushes it, and renames it over `current`: one
/// `rename(2)`, so a crash leaves the old or the new generation live, never neither.
package struct CurrentPointer: Sendable {
    /// A pointer file longer than this is not one MapLoader wrote.
    static let maximumFileSize: Int64 = 64

    /// The data directory's layout.
    package let directory: DataDirectory

    package init(_ directory: DataDirectory) { self.directory = directory }

    /// The live generation's number: the link's target or the pointer file's text; `nil`
    /// when `current` is missing, a folder, not a pointer MapLoader wrote, or names a
    /// generation that is not there (a damaged card, a partial copy): then
    /// ``Store/needsRecovery`` holds, and recovery makes the newest whole generation live
    /// rather than taking the others for unused.
    package func generation() -> Int? {
        let path = directory.current.path
        let number: Int?
        if let target = FileSystem.linkTarget(path) {
            number = Self.number(in: target)
        } else if let status = FileStatus.of(path), status.kind == .file, status.size <= Self.maximumFileSize,
            let data = FileSystem.contents(path)
        {
            number = Self.number(in: String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        } else {
            number = nil
        }
        guard let number, FileStatus.of(directory.generation(number).path)?.kind == .directory else { return nil }
        return number
    }

    /// `generations/<n>` → n; anything else → `nil`.
    static func number(in target: String) -> Int? {
        let parts = target.split(separator: "/")
        guard parts.count == 2, parts[0] == "generations", let number = Int(parts[1]), number > 0, String(number) == parts[1]
        else { return nil }
        return number
    }

    /// Makes generation `number` live with one rename, and flushes the data directory: a link
    /// where the file system has them, else a pointer file.
    package func switchTo(_ number: Int) throws(SystemError) {
        let staged = directory.currentLink(to: number)
        let target = directory.currentLinkTarget(number)
        FileSystem.removeTree(staged)
        do {
            try FileSystem.symbolicLink(staged.path, to: target)
        } catch  where error.isUnsupported {
            try FileSystem.write(Data((target + "\n").utf8), to: staged)
            try FileSystem.sync(staged.path)
        }
        try FileSystem.rename(staged.path, directory.current.path)
        // The switch is made: readers see the new generation from here on, so nothing after
        // this may report the commit as failed. Flushing the folder makes the switch survive
        // a power cut; should it fail twice, a crash may bring back the old generation
        // (whole, as promised), and the next writer's flush makes the switch durable.
        if (try? FileSystem.sync(directory.root.path)) == nil { _ = try? FileSystem.sync(directory.root.path) }
    }
}
