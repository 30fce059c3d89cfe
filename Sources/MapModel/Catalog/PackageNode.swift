import Foundation
import MapPlatform

/// One node of the package tree: the world, a continent, a country or a region.
///
/// A node without `children` is a leaf and carries data: in a published manifest,
/// one ``Artifact`` per data group it has. An inner node installs all its leaves.
package struct PackageNode: Sendable, Hashable, Codable {
    /// Stable id, e.g. `de-berlin`; lowercase letters, digits, `-`, `_` and `.`.
    public var id: String
    /// Human-readable name, e.g. `Berlin`.
    public var title: String
    /// Sub-packages; `nil` for a leaf.
    public var children: [PackageNode]?
    /// `[minLon, minLat, maxLon, maxLat]`, if published.
    public var bbox: BoundingBox?
    /// A finer outline than the box, if published.
    public var boundary: Boundary?
    /// Any publisher data (ISO code, population, …), returned as is.
    public var metadata: [String: JSONValue]?
    /// The leaf's archives by group id; only in published manifests.
    public var artifacts: [String: Artifact]?

    /// A node; pass `children` for an inner node, `artifacts` for a published leaf.
    public init(id: String, title: String, children: [PackageNode]? = nil, bbox: BoundingBox? = nil,
                boundary: Boundary? = nil, metadata: [String: JSONValue]? = nil,
                artifacts: [String: Artifact]? = nil) {
        self.id = id
        self.title = title
        self.children = children
        self.bbox = bbox
        self.boundary = boundary
        self.metadata = metadata
        self.artifacts = artifacts
    }

    /// Whether this node is a leaf (carries data itself).
    public var isLeaf: Bool { children == nil }

    /// This node and all its descendants, depth first, parents before children.
    public var allNodes: [PackageNode] {
        [self] + (children ?? []).flatMap(\.allNodes)
    }

    /// The leaves at or below this node.
    public var leaves: [PackageNode] {
        isLeaf ? [self] : (children ?? []).flatMap(\.leaves)
    }

    /// Whether `id` is a well-formed package or group id.
    public static func isValidID(_ id: String) -> Bool {
        guard let first = id.unicodeScalars.first, id.count <= 128,
              CharacterSet.lowercaseLetters.contains(first) || CharacterSet.decimalDigits.contains(first)
        else { return false }
        return id.unicodeScalars.allSatisfy { scalar in
            ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) || "-_.".unicodeScalars.contains(scalar)
        }
    }
}
