import Foundation
import MapPlatform

/// The package tree of one published version (`versions/<v>/manifest.json`).
package struct Manifest: Sendable, Hashable, Codable {
    /// Format of this file; readers refuse formats they do not know.
    public var formatVersion: Int
    /// The version label, e.g. `2026.11`.
    public var version: String
    /// The data groups a leaf may carry.
    public var groups: [DataGroup]
    /// The root of the package tree, usually `world`.
    public var root: PackageNode

    /// The format this build writes and reads.
    public static let currentFormat = 1

    /// A manifest.
    public init(version: String, groups: [DataGroup], root: PackageNode, formatVersion: Int = Manifest.currentFormat) {
        self.formatVersion = formatVersion
        self.version = version
        self.groups = groups
        self.root = root
    }

    /// The largest unpacked manifest a client accepts.
    public static let sizeLimit = 64 << 20

    /// The manifest as published: compact JSON, zstd-compressed when `compressed`.
    public func encoded(compressed: Bool = true) throws -> Data {
        let json = try jsonData(pretty: !compressed)
        return compressed ? Data(try ZstdFrame.compress(Array(json), level: 19)) : json
    }

    /// Reads a published manifest, compressed or plain JSON.
    public static func decode(_ data: Data) throws(JSONProblem) -> Manifest {
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
    public func group(_ id: String) -> DataGroup? { groups.first { $0.id == id } }
}

/// What `tree.json` in a release folder holds: groups and the package tree, without artifacts.
package struct ReleaseTree: Sendable, Hashable, Codable {
    /// The data groups of the release.
    public var groups: [DataGroup]
    /// The root of the package tree.
    public var root: PackageNode

    /// A release tree.
    public init(groups: [DataGroup], root: PackageNode) {
        self.groups = groups
        self.root = root
    }
}
