import Foundation
import MapDelta
import MapModel
import MapPlatform

/// Reads and checks a release folder: `tree.json` plus `data/<package>/<group>/…`.
struct ReleaseReader {
    let root: URL

    /// The tree, checked: well-formed unique ids, groups known, every leaf has its
    /// required groups, and no data for packages or groups the tree does not define.
    func read() throws -> ReleaseTree {
        let file = root.appendingPathComponent("tree.json")
        guard let data = try? Data(contentsOf: file) else {
            throw PublishError("\(file.path) is missing: a release folder needs tree.json and data/")
        }
        let tree: ReleaseTree
        do {
            tree = try JSONCoding.decode(ReleaseTree.self, from: data)
        } catch {
            throw PublishError("\(file.path) is not a valid package tree: \(error)")
        }
        var groupIDs = Set<String>()
        for group in tree.groups {
            guard PackageNode.isValidID(group.id), groupIDs.insert(group.id).inserted else {
                throw PublishError("group id '\(group.id)' in tree.json is malformed or repeated")
            }
        }
        var ids = Set<String>()
        for node in tree.root.allNodes {
            guard PackageNode.isValidID(node.id) else {
                throw PublishError("package id '\(node.id)' in tree.json is malformed: use lowercase letters, digits, '-', '_' and '.'")
            }
            guard ids.insert(node.id).inserted else { throw PublishError("package id '\(node.id)' appears twice in tree.json") }
            if node.children?.isEmpty == true {
                throw PublishError("package '\(node.id)' has an empty children list; drop the key to make it a leaf")
            }
        }
        let leaves = Set(tree.root.leaves.map(\.id))
        let dataFolder = root.appendingPathComponent("data")
        try refuseLink(dataFolder, "data")
        for package in (try? FileManager.default.contentsOfDirectory(atPath: dataFolder.path)) ?? [] {
            guard leaves.contains(package) else {
                throw PublishError("data/\(package) has no leaf package '\(package)' in tree.json")
            }
            try refuseLink(dataFolder.appendingPathComponent(package), "data/\(package)")
            for group in (try? FileManager.default.contentsOfDirectory(atPath: dataFolder.appendingPathComponent(package).path)) ?? [] {
                guard groupIDs.contains(group) else {
                    throw PublishError("data/\(package)/\(group): tree.json defines no data group '\(group)'")
                }
                try refuseLink(dataFolder.appendingPathComponent(package).appendingPathComponent(group), "data/\(package)/\(group)")
            }
        }
        for leaf in leaves.sorted() {
            for group in tree.groups where group.required && !isDirectory(groupFolder(leaf, group.id)) {
                throw PublishError("leaf '\(leaf)' lacks required group '\(group.id)': add data/\(leaf)/\(group.id)/")
            }
        }
        return tree
    }

    /// The files of one leaf's group, hashed, with names every client accepts.
    static func entries(of package: String, _ group: String, in folder: URL) throws -> [FileEntry] {
        let entries: [FileEntry]
        do {
            entries = try FileTree.entries(in: folder)
        } catch {
            throw PublishError("data/\(package)/\(group): \(error)")
        }
        if let bad = entries.first(where: { RelativePath.normalized($0.path).map { Array($0.utf8) } != Array($0.path.utf8) }) {
            throw PublishError(
                "data/\(package)/\(group)/\(bad.path): clients refuse this name (a backslash, a NUL, or a part longer than 255 bytes); rename the file"
            )
        }
        return entries
    }

    func groupFolder(_ package: String, _ group: String) -> URL {
        root.appendingPathComponent("data").appendingPathComponent(package).appendingPathComponent(group)
    }

    /// Whether `url` is a real folder (a symbolic link to one is not).
    func isDirectory(_ url: URL) -> Bool {
        FileStatus.of(url.path)?.kind == .directory
    }

    /// Refuses a file with hard links outside the release: its other names are files the
    /// release does not hold (the publisher's own, say), and publishing it would leak them.
    /// A file linked only within the release (two groups sharing it) is fine.
    func refuseOutsideHardLinks() throws {
        let data = root.appendingPathComponent("data")
        var linked: [FileIdentity: (path: String, inside: Int, links: Int)] = [:]
        for file in try FileTree.files(in: data) {
            guard let status = FileStatus.of(data.appendingPathComponent(file.path).path), status.links > 1 else { continue }
            linked[status.identity, default: (file.path, 0, status.links)].inside += 1
        }
        let outside = linked.values.filter { $0.inside < $0.links }.min { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        if let outside {
            throw PublishError(
                "data/\(outside.path) has \(outside.links - outside.inside) hard link(s) outside the release: publish takes only the release's own files; copy it in (cp without -l), or pass --allow-hard-links if every link is a file you mean to publish"
            )
        }
    }

    /// Refuses a symbolic link where the release must hold a real folder: following it
    /// would publish files from outside the release.
    private func refuseLink(_ url: URL, _ name: String) throws {
        if FileStatus.of(url.path)?.kind == .symbolicLink {
            throw PublishError("\(name) is a symbolic link: publish takes only real folders inside the release; copy the data in instead")
        }
    }
}

extension FileTree {
    /// ``FileEntry`` for every file below `root` (hashing each, streamed), sorted by path.
    package static func entries(in root: URL) throws -> [FileEntry] {
        try files(in: root).map { file in
            let hash = try FileHashing.sha256(ofFileAt: root.appendingPathComponent(file.path))
            return FileEntry(path: file.path, size: hash.size, sha256: hash.hex)
        }
    }
}
