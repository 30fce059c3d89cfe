import Foundation
import MapPlatform

/// One node of the package tree: the world, a continent, a country or a region.
///
/// A node without `children` is a leaf and carries data: in a published manifest,
/// one ``Artifact`` per data group it has. An inner node installs all its leaves.
package struct PackageNode: Sendable, Hashable, Codable {
    /// Stable id, e.g. `de-berlin`; lowercase letters, digits, `-`, `_` and `.`.
    package var id: String
    /// Human-readable name, e.g. `Berlin`.
    package var title: String
    /// Sub-packages; `nil` for a leaf.
    package var children: [PackageNode]?
    /// `[minLon, minLat, maxLon, maxLat]`, if published.
    package var bbox: BoundingBox?
    /// A finer outline than the box, if published.
    package var boundary: Boundary?
    /// Any publisher data (ISO code, population, …), returned as is.
    package var metadata: [String: JSONValue]?
    /// The leaf's archives by group id; only in published manifests.
    package var artifacts: [String: Artifact]?
    /// In a split manifest's index: this subtree is published separately, as this part.
    /// Such a stub has no children or artifacts of its own until the part is read.
    package var part: ManifestPart?

    /// A node; pass `children` for an inner node, `artifacts` for a published leaf.
    package init(
        id: String, title: String, children: [PackageNode]? = nil, bbox: BoundingBox? = nil,
        boundary: Boundary? = nil, metadata: [String: JSONValue]? = nil,
        artifacts: [String: Artifact]? = nil
    ) {
        self.id = id
        self.title = title
        self.children = children
        self.bbox = bbox
        self.boundary = boundary
        self.metadata = metadata
        self.artifacts = artifacts
    }

    /// Whether this node is a leaf (carries data itself); a stub of an unread part is not.
    package var isLeaf: Bool { children == nil && part == nil }

    /// This node and all its descendants, depth first, parents before children.
    package var allNodes: [PackageNode] {
        var nodes: [PackageNode] = []
        walk { nodes.append($0) }
        return nodes
    }

    /// The leaves at or below this node.
    package var leaves: [PackageNode] {
        var nodes: [PackageNode] = []
        walk { if $0.isLeaf { nodes.append($0) } }
        return nodes
    }

    /// Calls `body` with this node and each descendant, depth first, parents first (one
    /// pass, no intermediate arrays: a 10,000-leaf tree is walked often).
    package func walk(_ body: (PackageNode) -> Void) {
        body(self)
        for child in children ?? [] { child.walk(body) }
    }

    /// The stubs of unread parts at or below this node.
    package var stubs: [PackageNode] {
        part != nil ? [self] : (children ?? []).flatMap(\.stubs)
    }

    /// This tree with each stub whose id is in `parts` replaced by that subtree.
    package func replacingStubs(_ parts: [String: PackageNode]) -> PackageNode {
        if part != nil { return parts[id] ?? self }
        guard let children else { return self }
        var node = self
        node.children = children.map { $0.replacingStubs(parts) }
        return node
    }

    /// This subtree without the stubs of parts that were not read (an offline listing
    /// shows the parts it has).
    package func droppingStubs() -> PackageNode {
        guard let children else { return self }
        var node = self
        node.children = children.filter { $0.part == nil }.map { $0.droppingStubs() }
        return node
    }

    /// The smallest box holding every box of this subtree; `nil` when a node has a
    /// boundary without a box (its extent is unknown) or no node has a box.
    package var bounds: BoundingBox? {
        var result: BoundingBox?
        for node in allNodes {
            guard let box = node.bbox else {
                if node.boundary != nil { return nil }
                continue
            }
            result =
                result.map {
                    BoundingBox(
                        minLon: min($0.minLon, box.minLon), minLat: min($0.minLat, box.minLat),
                        maxLon: max($0.maxLon, box.maxLon), maxLat: max($0.maxLat, box.maxLat))
                } ?? box
        }
        return result
    }

    /// The number of leaves at or below this node.
    package var leafCount: Int { isLeaf ? 1 : (children ?? []).reduce(0) { $0 + $1.leafCount } }

    /// Whether `id` is a well-formed package or group id.
    package static func isValidID(_ id: String) -> Bool {
        guard let first = id.unicodeScalars.first, id.count <= 128,
            CharacterSet.lowercaseLetters.contains(first) || CharacterSet.decimalDigits.contains(first)
        else { return false }
        return id.unicodeScalars.allSatisfy { scalar in
            ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) || "-_.".unicodeScalars.contains(scalar)
        }
    }
}

/// A subtree of a split manifest, published as a content-addressed blob
/// (`blobs/sha256/…`, zstd-compressed JSON of the subtree's ``PackageNode``) and pinned by
/// the index's SHA-256, so a client fetches only the parts it needs and never twice.
package struct ManifestPart: Sendable, Hashable, Codable {
    /// SHA-256 of the part's bytes.
    package var sha256: String
    /// Bytes of the part.
    package var size: Int64
    /// Leaves in the subtree.
    package var leaves: Int
    /// A box holding every box and boundary in the subtree (`nil`: some node has a
    /// boundary but no box): a client locating a point reads only the parts whose
    /// bounds contain it.
    package var bounds: BoundingBox?

    /// A part reference.
    package init(sha256: String, size: Int64, leaves: Int, bounds: BoundingBox?) {
        self.sha256 = sha256
        self.size = size
        self.leaves = leaves
        self.bounds = bounds
    }
}
