import Foundation

/// Structural checks of a manifest beyond what decoding catches.
package enum ManifestValidation {
    /// The first problem found, or `nil` when the manifest is sound.
    package static func problem(in manifest: Manifest) -> String? {
        guard manifest.formatVersion == Manifest.currentFormat || manifest.formatVersion == Manifest.splitFormat else {
            return "format \(manifest.formatVersion) is not supported by this maploader"
        }
        if manifest.root.part != nil { return "the root is a part" }
        var groupIDs = Set<String>()
        for group in manifest.groups {
            guard PackageNode.isValidID(group.id) else { return "group id '\(group.id)' is malformed" }
            guard groupIDs.insert(group.id).inserted else { return "group '\(group.id)' is defined twice" }
        }
        var ids = Set<String>()
        ids.reserveCapacity(1024)
        var problem: String?
        // One walk without copying the tree (a 10,000-leaf catalog is checked on every read).
        manifest.root.walk { node in
            guard problem == nil else { return }
            problem = Self.problem(in: node, groupIDs: groupIDs, formatVersion: manifest.formatVersion, ids: &ids)
        }
        return problem
    }

    private static func problem(
        in node: PackageNode, groupIDs: Set<String>, formatVersion: Int,
        ids: inout Set<String>
    ) -> String? {
        guard PackageNode.isValidID(node.id) else { return "package id '\(node.id)' is malformed" }
        guard ids.insert(node.id).inserted else { return "package '\(node.id)' appears twice" }
        if let children = node.children, children.isEmpty { return "package '\(node.id)' has an empty children list" }
        if let part = node.part {
            guard formatVersion == Manifest.splitFormat else { return "package '\(node.id)' is a part in an unsplit manifest" }
            guard node.children == nil, node.artifacts == nil, FilePin.isHash(part.sha256), part.size > 0,
                part.size <= SiteLimits.metadataBytes, (0...SiteLimits.leaves).contains(part.leaves)
            else {
                return
                    "the part stub '\(node.id)' is malformed (or claims more than \(SiteLimits.metadataBytes >> 20) MiB or \(SiteLimits.leaves) leaves)"
            }
        }
        for (group, artifact) in node.artifacts ?? [:] {
            guard groupIDs.contains(group) else { return "package '\(node.id)' has an artifact for unknown group '\(group)'" }
            guard FilePin.isHash(artifact.sha256), FilePin.isHash(artifact.treeHash) else {
                return "artifact \(node.id)/\(group) has malformed hashes (64 lowercase hex digits each)"
            }
            if let problem = Self.problem(in: artifact, "\(node.id)/\(group)") { return problem }
        }
        return nil
    }

    /// Every number of an artifact and its patch edges within ``SiteLimits``.
    private static func problem(in artifact: Artifact, _ name: String) -> String? {
        guard SiteLimits.accepts(artifact.size, upTo: SiteLimits.blobBytes) else {
            return "artifact \(name) has size \(artifact.size), outside 0…\(SiteLimits.blobBytes)"
        }
        guard SiteLimits.accepts(artifact.unpackedSize, upTo: SiteLimits.unpackedBytes) else {
            return "artifact \(name) has unpackedSize \(artifact.unpackedSize), outside 0…\(SiteLimits.unpackedBytes)"
        }
        guard (0...SiteLimits.files).contains(artifact.files) else {
            return "artifact \(name) has \(artifact.files) files, outside 0…\(SiteLimits.files)"
        }
        guard (artifact.patches?.count ?? 0) <= SiteLimits.patchesPerArtifact else {
            return "artifact \(name) lists \(artifact.patches?.count ?? 0) patches, more than \(SiteLimits.patchesPerArtifact)"
        }
        for edge in artifact.patches ?? [] {
            guard SiteLimits.accepts(edge.size, upTo: SiteLimits.blobBytes), FilePin.isHash(edge.sha256),
                SiteLimits.accepts(edge.writeBytes ?? 0, upTo: SiteLimits.unpackedBytes),
                SiteLimits.accepts(edge.cloneWriteBytes ?? 0, upTo: SiteLimits.unpackedBytes),
                FilePin.isHash(edge.fromTreeHash), FilePin.isHash(edge.toTreeHash),
                (edge.codecs?.count ?? 0) <= 8,
                edge.codecs?.allSatisfy({ (1...32).contains($0.utf8.count) }) ?? true
            else {
                return
                    "artifact \(name) has a patch \(edge.from)→\(edge.to) with size \(edge.size) (outside 0…\(SiteLimits.blobBytes)) or malformed hashes"
            }
        }
        return nil
    }
}
