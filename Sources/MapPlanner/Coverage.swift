public import Foundation
package import MapModel

/// Where the maps are: every leaf package with its outline and its state on this device
/// (``MapLoader/coverage(installedOnly:)``), ready to write as GeoJSON for any map tool or
/// to draw as an SVG world map.
public struct Coverage: Sendable, Hashable {
    /// One package's area and what this device has of it.
    public struct Area: Sendable, Hashable {
        /// The package's status: id, title, state, version, groups, sizes, metadata, tags.
        public var package: PackageStatus
        /// Its outline: polygons of `[lon, lat]` rings, outer ring first, each ring closed
        /// and wound as RFC 7946 asks (outer rings counterclockwise, holes clockwise). A
        /// package published without a boundary gets its box.
        public var polygons: [[[[Double]]]]
    }

    /// Every leaf package that has an outline or a box, in tree order.
    public var areas: [Area]

    package init(tree: PackageTree, manifest: Manifest, installedOnly: Bool) {
        let nodes = Dictionary(manifest.root.allNodes.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        areas = tree.packages.compactMap { status in
            guard status.isLeaf, !installedOnly || status.state != .notInstalled, let node = nodes[status.id] else { return nil }
            let polygons: [[[[Double]]]]
            if let boundary = node.boundary {
                polygons = boundary.polygons.map { rings in
                    rings.enumerated().map { index, ring in Self.normalized(ring, counterclockwise: index == 0) }
                }
            } else if let box = node.bbox ?? status.bbox {
                polygons = [
                    [
                        [
                            [box.minLon, box.minLat], [box.maxLon, box.minLat], [box.maxLon, box.maxLat],
                            [box.minLon, box.maxLat], [box.minLon, box.minLat],
                        ]
                    ]
                ]
            } else {
                return nil
            }
            return Area(package: status, polygons: polygons)
        }
    }

    /// A ring closed (last position equal to the first) and turned to the wanted direction.
    package static func normalized(_ ring: [[Double]], counterclockwise: Bool) -> [[Double]] {
        var ring = ring.map { Array($0.prefix(2)) }
        if let first = ring.first, ring.last != first { ring.append(first) }
        if (signedArea(ring) > 0) != counterclockwise { ring.reverse() }
        return ring
    }

    /// Twice the signed planar area of a closed ring: positive when counterclockwise.
    package static func signedArea(_ ring: [[Double]]) -> Double {
        zip(ring, ring.dropFirst()).reduce(0) { $0 + ($1.0[0] * $1.1[1] - $1.1[0] * $1.0[1]) }
    }

    // MARK: - GeoJSON

    /// A GeoJSON FeatureCollection (RFC 7946): one feature per area, a `Polygon` or
    /// `MultiPolygon`, with the package's id, title, state, version, installed groups,
    /// sizes, publisher metadata and tags as properties.
    public func geoJSON() -> Data {
        let features: [JSONValue] = areas.map { area in
            let status = area.package
            var properties: [String: JSONValue] = [
                "id": .string(status.id), "title": .string(status.title), "state": .string(status.state.rawValue),
                "version": status.version.map(JSONValue.string) ?? .null,
                "groups": .array(status.groups.map(JSONValue.string)),
                "downloadSize": .number(Double(status.downloadSize)), "sizeOnDisk": .number(Double(status.sizeOnDisk)),
                "tags": .object(status.tags.mapValues(JSONValue.string)),
            ]
            if let metadata = status.metadata { properties["metadata"] = .object(metadata) }
            let coordinates = { (polygon: [[[Double]]]) in
                JSONValue.array(polygon.map { .array($0.map { .array($0.map(JSONValue.number)) }) })
            }
            let geometry: JSONValue =
                area.polygons.count == 1
                ? .object(["type": .string("Polygon"), "coordinates": coordinates(area.polygons[0])])
                : .object(["type": .string("MultiPolygon"), "coordinates": .array(area.polygons.map(coordinates))])
            return .object([
                "type": .string("Feature"), "id": .string(status.id), "geometry": geometry,
                "properties": .object(properties),
            ])
        }
        let collection = JSONValue.object(["type": .string("FeatureCollection"), "features": .array(features)])
        return (try? JSONCoding.encoder(pretty: true).encode(collection)) ?? Data()
    }

    // MARK: - SVG

    /// The fill of each state on the map, and its legend label.
    static let palette: [(state: PackageState, fill: String, label: String)] = [
        (.installed, "#2e9d4f", "installed"),
        (.partiallyInstalled, "#e0b81f", "partly installed"),
        (.updateAvailable, "#2f74c0", "update available"),
        (.inconsistent, "#c8372d", "damaged: run repair"),
        (.notInstalled, "#b9bec4", "not installed"),
    ]

    /// An SVG world map (equirectangular, `width` × `width`/2 pixels): one `<path>` per
    /// area filled by its state, with the package id as its `<title>`, a graticule every
    /// 30° and a legend.
    public func svg(width: Int = 1200) -> String {
        let width = Double(max(width, 200))
        let height = width / 2
        func point(_ position: [Double]) -> String {
            let x = (position[0] + 180) / 360 * width
            let y = (90 - position[1]) / 180 * height
            return String(format: "%.2f,%.2f", x, y)
        }
        var svg = """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))">
            <title>MapLoader coverage</title>
            <rect width="100%" height="100%" fill="#eef3f7"/>

            """
        for lon in stride(from: -150.0, through: 150, by: 30) {
            svg +=
                "<line class=\"graticule\" x1=\"\(point([lon, 90]).split(separator: ",")[0])\" y1=\"0\" x2=\"\(point([lon, -90]).split(separator: ",")[0])\" y2=\"\(Int(height))\" stroke=\"#d5dde5\" stroke-width=\"1\"/>\n"
        }
        for lat in stride(from: -60.0, through: 60, by: 30) {
            let y = point([0, lat]).split(separator: ",")[1]
            svg += "<line class=\"graticule\" x1=\"0\" y1=\"\(y)\" x2=\"\(Int(width))\" y2=\"\(y)\" stroke=\"#d5dde5\" stroke-width=\"1\"/>\n"
        }
        for area in areas {
            let fill = Self.palette.first { $0.state == area.package.state }?.fill ?? "#b9bec4"
            let data = area.polygons.flatMap { $0 }.map { ring in
                "M" + ring.map(point).joined(separator: " L") + " Z"
            }.joined(separator: " ")
            svg +=
                "<path class=\"package\" data-id=\"\(Self.escaped(area.package.id))\" data-state=\"\(area.package.state.rawValue)\" "
                + "d=\"\(data)\" fill=\"\(fill)\" fill-rule=\"evenodd\" stroke=\"#3b4650\" stroke-width=\"0.5\">"
                + "<title>\(Self.escaped(area.package.title)) (\(Self.escaped(area.package.id))): \(area.package.state.rawValue)</title></path>\n"
        }
        svg += "<g class=\"legend\" font-family=\"sans-serif\" font-size=\"12\">\n"
        svg +=
            "<rect x=\"8\" y=\"\(Int(height) - 20 * Self.palette.count - 12)\" width=\"170\" height=\"\(20 * Self.palette.count + 8)\" fill=\"#ffffff\" fill-opacity=\"0.85\" stroke=\"#9aa4ad\"/>\n"
        for (index, entry) in Self.palette.enumerated() {
            let y = Int(height) - 20 * (Self.palette.count - index) - 6
            svg +=
                "<rect x=\"16\" y=\"\(y)\" width=\"14\" height=\"14\" fill=\"\(entry.fill)\"/>"
                + "<text x=\"38\" y=\"\(y + 12)\">\(entry.label)</text>\n"
        }
        svg += "</g>\n</svg>\n"
        return svg
    }

    /// Text made safe for XML content and attributes.
    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
