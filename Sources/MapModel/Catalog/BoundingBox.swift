import Foundation
import MapPlatform

/// A `[minLon, minLat, maxLon, maxLat]` box, encoded as that four-number array.
public struct BoundingBox: Sendable, Hashable, Codable {
    /// Western edge, degrees.
    public var minLon: Double
    /// Southern edge, degrees.
    public var minLat: Double
    /// Eastern edge, degrees.
    public var maxLon: Double
    /// Northern edge, degrees.
    public var maxLat: Double

    /// A box from its four edges.
    public init(minLon: Double, minLat: Double, maxLon: Double, maxLat: Double) {
        (self.minLon, self.minLat, self.maxLon, self.maxLat) = (minLon, minLat, maxLon, maxLat)
    }

    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        let values = [
            try container.decode(Double.self), try container.decode(Double.self),
            try container.decode(Double.self), try container.decode(Double.self),
        ]
        guard container.isAtEnd, values[0] <= values[2], values[1] <= values[3],
            (-180...180).contains(values[0]), (-180...180).contains(values[2]),
            (-90...90).contains(values[1]), (-90...90).contains(values[3])
        else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "bbox must be [minLon, minLat, maxLon, maxLat] within ±180/±90"))
        }
        self.init(minLon: values[0], minLat: values[1], maxLon: values[2], maxLat: values[3])
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(contentsOf: [minLon, minLat, maxLon, maxLat])
    }

    /// Whether the point lies in the box (edges included).
    public func contains(lat: Double, lon: Double) -> Bool {
        (minLat...maxLat).contains(lat) && (minLon...maxLon).contains(lon)
    }

    /// The box's planar area in square degrees.
    public var area: Double { (maxLon - minLon) * (maxLat - minLat) }
}
