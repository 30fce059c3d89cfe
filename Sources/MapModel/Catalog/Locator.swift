import MapPlatform

/// Maps a coordinate to the package that covers it.
package enum Locator {
    /// The node with the smallest outline that contains the point: its `boundary` when it
    /// has one, else its `bbox`. Nodes with neither are skipped.
    package static func smallestNode(containing latitude: Double, _ longitude: Double, in root: PackageNode) -> PackageNode? {
        var best: (node: PackageNode, area: Double)?
        for node in root.allNodes {
            let area: Double
            if let boundary = node.boundary {
                if let bbox = node.bbox, !bbox.contains(lat: latitude, lon: longitude) { continue }
                guard boundary.contains(lat: latitude, lon: longitude) else { continue }
                area = boundary.area
            } else if let bbox = node.bbox {
                guard bbox.contains(lat: latitude, lon: longitude) else { continue }
                area = bbox.area
            } else {
                continue
            }
            if area < best?.area ?? .infinity { best = (node, area) }
        }
        return best?.node
    }
}
