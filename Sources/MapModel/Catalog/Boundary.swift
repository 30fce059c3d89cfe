import Foundation
import MapPlatform

/// A package's outline: a GeoJSON `Polygon` or `MultiPolygon` in `[lon, lat]` order.
///
/// Both shapes are held as a list of polygons, each a list of rings (outer ring first,
/// then holes), each a list of `[lon, lat]` positions.
package struct Boundary: Sendable, Hashable, Codable {
    /// `true` when the source was a `MultiPolygon`; kept so encoding round-trips.
    package var isMulti: Bool
    /// Polygons, each an outer ring followed by holes.
    package var polygons: [[[[Double]]]]

    /// A boundary made of the given polygons.
    package init(polygons: [[[[Double]]]], isMulti: Bool? = nil) {
        self.polygons = polygons
        self.isMulti = isMulti ?? (polygons.count != 1)
    }

    private enum CodingKeys: String, CodingKey { case type, coordinates }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case "Polygon":
            polygons = [try container.decode([[[Double]]].self, forKey: .coordinates)]
            isMulti = false
        case "MultiPolygon":
            polygons = try container.decode([[[[Double]]]].self, forKey: .coordinates)
            isMulti = true
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container,
                debugDescription: "boundary type must be Polygon or MultiPolygon, not \(type)")
        }
        for ring in polygons.joined() where ring.contains(where: { $0.count < 2 }) {
            throw DecodingError.dataCorruptedError(
                forKey: .coordinates, in: container,
                debugDescription: "a boundary position needs [lon, lat]")
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if isMulti {
            try container.encode("MultiPolygon", forKey: .type)
            try container.encode(polygons, forKey: .coordinates)
        } else {
            try container.encode("Polygon", forKey: .type)
            try container.encode(polygons.first ?? [], forKey: .coordinates)
        }
    }

    /// Whether the point lies inside the outline (even-odd rule over every ring, so holes exclude).
    package func contains(lat: Double, lon: Double) -> Bool {
        polygons.contains { polygon in
            var inside = false
            for ring in polygon where Self.ring(ring, contains: (lon, lat)) { inside.toggle() }
            return inside
        }
    }

    /// The outline's planar area in square degrees (holes subtracted); used to rank candidates.
    package var area: Double {
        polygons.reduce(0) { total, polygon in
            guard let outer = polygon.first else { return total }
            let holes = polygon.dropFirst().reduce(0) { $0 + abs(Self.signedArea($1)) }
            return total + abs(Self.signedArea(outer)) - holes
        }
    }

    private static func ring(_ ring: [[Double]], contains point: (x: Double, y: Double)) -> Bool {
        var inside = false
        var j = ring.count - 1
        for i in ring.indices {
            let (xi, yi, xj, yj) = (ring[i][0], ring[i][1], ring[j][0], ring[j][1])
            if (yi > point.y) != (yj > point.y),
                point.x < (xj - xi) * (point.y - yi) / (yj - yi) + xi
            {
                inside.toggle()
            }
            j = i
        }
        return inside
    }

    private static func signedArea(_ ring: [[Double]]) -> Double {
        guard ring.count > 2 else { return 0 }
        var sum = 0.0
        var j = ring.count - 1
        for i in ring.indices {
            sum += (ring[j][0] * ring[i][1]) - (ring[i][0] * ring[j][1])
            j = i
        }
        return sum / 2
    }
}
