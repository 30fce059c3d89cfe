package import Foundation
import MapPlatform

/// The package tree of one published version (`versions/<v>/manifest.json`).
package struct Manifest: Sendable, Hashable, Codable {
    /// Format of this file; readers refuse formats they do not know.
    package var formatVersion: Int
    /// The version label, e.g. `2026.11`.
    package var version: String
    /// The data groups a leaf may carry.
    package var groups: [DataGroup]
    /// The root of the package tree, usually `world`.
    package var root: PackageNode

    /// The format this build writes and reads.
    package static let currentFormat = 1

    /// A manifest.
    package init(version: String, groups: [DataGroup], root: PackageNode, formatVersion: Int = Manifest.currentFormat) {
        self.formatVersion = formatVersion
        self.version = version
        self.groups = groups
        self.root = root
    }

    /// The largest unpacked manifest a client accepts.
    package static let sizeLimit = 64 << 20

    /// The manifest as published: compact JSON, zstd-compressed when `compressed`.
    package func encoded(compressed: Bool = true) throws -> Data {
        let json = try jsonData(pretty: !compressed)
        return compressed ? Data(try ZstdFrame.compress(Array(json), level: 19)) : json
    }

    /// Reads a published manifest, compressed or plain JSON.
    package static func decode(_ data: Data) throws(JSONProblem) -> Manifest {
        var json = data
        if data.starts(with: [0x28, 0xB5, 0x2F, 0xFD]) {
            do {
                json = Data(try ZstdFrame.decompress(Array(data), limit: sizeLimit))
            } catch {
                throw JSONProblem("not a readable zstd frame (\(error))")
            }
        }
        return try JSONCoding.decode(Manifest.self, from: json)
    }

    /// The group with this id, if the manifest defines it.
    package func group(_ id: String) -> DataGroup? { groups.first { $0.id == id } }
}

/// What `tree.json` in a release folder holds: groups and the package tree, without artifacts.
package struct ReleaseTree: Sendable, Hashable, Codable {
    /// The data groups of the release.
    package var groups: [DataGroup]
    /// The root of the package tree.
    package var root: PackageNode

    /// A release tree.
    package init(groups: [DataGroup], root: PackageNode) {
        self.groups = groups
        self.root = root
    }
}

extension Manifest {
    /// The format of a split manifest's index: subtrees are stubs naming their part.
    package static let splitFormat = 2

    /// The stubs of parts not read yet.
    package var stubs: [PackageNode] { root.stubs }

    /// This manifest as an index plus parts: every highest node below the root with at
    /// most `maxLeaves` leaves becomes a part (its subtree, published on its own), and the
    /// index keeps a stub (id, title, box, part). Returns `nil` parts and `self` when the
    /// tree has `maxLeaves` leaves or fewer: small catalogs stay one file of format 1.
    package func split(maxLeaves: Int) throws -> (index: Manifest, parts: [Data]) {
        guard maxLeaves > 0, root.leafCount > maxLeaves else { return (self, []) }
        var parts: [Data] = []
        func cut(_ node: PackageNode) throws -> PackageNode {
            if node.leafCount <= maxLeaves {
                let data = Data(try ZstdFrame.compress(Array(try JSONCoding.encoder(pretty: false).encode(node)), level: 19))
                parts.append(data)
                var stub = PackageNode(id: node.id, title: node.title, bbox: node.bbox)
                stub.part = ManifestPart(
                    sha256: FileHashing.sha256(of: data), size: Int64(data.count),
                    leaves: node.leafCount, bounds: node.bounds)
                return stub
            }
            var node = node
            node.children = try node.children?.map(cut)
            return node
        }
        var index = self
        index.formatVersion = Self.splitFormat
        index.root.children = try root.children?.map(cut)
        return (index, parts)
    }

    /// Reads one part of a split manifest (zstd-compressed JSON of a subtree).
    package static func decodePart(_ data: Data) throws(JSONProblem) -> PackageNode {
        guard data.starts(with: [0x28, 0xB5, 0x2F, 0xFD]) else { throw JSONProblem("a manifest part is not a zstd frame") }
        let json: Data
        do {
            json = Data(try ZstdFrame.decompress(Array(data), limit: sizeLimit))
        } catch {
            throw JSONProblem("not a readable zstd frame (\(error))")
        }
        return try JSONCoding.decode(PackageNode.self, from: json)
    }
}
