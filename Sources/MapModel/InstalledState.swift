package import Foundation
import MapPlatform

/// What one generation of the store holds (`generations/<n>/state.json`).
package struct InstalledState: Sendable, Hashable, Codable {
    /// The state format this build writes and reads.
    package static let currentFormat = 1

    /// The format of this state file (`nil` in files written before it was recorded: 1).
    package var formatVersion: Int? = InstalledState.currentFormat
    /// The map version of every installed group, or `nil` when nothing is installed.
    package var version: String?
    /// SHA-256 of the manifest of `version`, so the tree can be read offline from the cache.
    package var manifest: String?
    /// The generation number this state describes.
    package var generation: Int
    /// When the generation was committed; files changed later are suspect.
    package var committed: Date
    /// Installed groups by package id, then group id.
    package var packages: [String: [String: InstalledGroup]]

    /// An empty state: nothing installed.
    package static let empty = InstalledState(version: nil, manifest: nil, generation: 0, committed: .distantPast, packages: [:])

    /// A state.
    package init(
        version: String?, manifest: String?, generation: Int, committed: Date,
        packages: [String: [String: InstalledGroup]]
    ) {
        self.version = version
        self.manifest = manifest
        self.generation = generation
        self.committed = committed
        self.packages = packages
    }

    /// Why this state cannot be trusted, or `nil` when it is consistent.
    package var problem: String? {
        if let format = formatVersion, format > Self.currentFormat {
            return "it was written by a newer MapLoader (state format \(format), this one reads \(Self.currentFormat))"
        }
        if generation < 0 { return "it records a negative generation number" }
        for (package, groups) in packages {
            for (group, installed) in groups where installed.size < 0 || installed.files < 0 {
                return "it records a negative size for \(package)/\(group)"
            }
        }
        if !packages.isEmpty && version == nil { return "it records installed packages without a version" }
        return nil
    }

    /// Bytes the package's installed files take.
    package func size(of package: String) -> Int64 {
        packages[package]?.values.reduce(0) { $0 + $1.size } ?? 0
    }
}

/// One installed data group of one package.
package struct InstalledGroup: Sendable, Hashable, Codable {
    /// SHA-256 of the archive the files came from (or the artifact they match after patching).
    package var artifact: String
    /// ``TreeHash`` of the installed files.
    package var treeHash: String
    /// Number of files.
    package var files: Int
    /// Total bytes of the files.
    package var size: Int64

    /// An installed group.
    package init(artifact: String, treeHash: String, files: Int, size: Int64) {
        self.artifact = artifact
        self.treeHash = treeHash
        self.files = files
        self.size = size
    }
}
