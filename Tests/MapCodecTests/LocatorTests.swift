import Foundation
import MapTestSupport
import Testing

@testable import MapLoader

@Suite struct LocatorTests {
    let root = PackageNode(
        id: "world", title: "World",
        children: [
            PackageNode(id: "de", title: "Germany", bbox: BoundingBox(minLon: 5.87, minLat: 47.27, maxLon: 15.04, maxLat: 55.06)),
            PackageNode(
                id: "de-berlin", title: "Berlin", bbox: BoundingBox(minLon: 13.08, minLat: 52.33, maxLon: 13.76, maxLat: 52.68),
                boundary: Boundary(polygons: [[[[13.08, 52.33], [13.76, 52.33], [13.76, 52.68], [13.08, 52.33]]]])),
            PackageNode(
                id: "islands", title: "Islands",
                boundary: Boundary(polygons: [
                    [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]], [[0.4, 0.4], [0.6, 0.4], [0.6, 0.6], [0.4, 0.6], [0.4, 0.4]]],
                    [[[2, 2], [3, 2], [3, 3], [2, 3], [2, 2]]],
                ])),
        ])

    @Test func smallestContainingOutlineWins() {
        // Inside Berlin's triangle (south-east half of its box).
        #expect(Locator.smallestNode(containing: 52.40, 13.70, in: root)?.id == "de-berlin")
        // In Berlin's box but outside its triangle: Germany.
        #expect(Locator.smallestNode(containing: 52.65, 13.10, in: root)?.id == "de")
    }

    @Test func multiPolygonAndHoles() {
        #expect(Locator.smallestNode(containing: 2.5, 2.5, in: root)?.id == "islands")
        #expect(Locator.smallestNode(containing: 0.2, 0.2, in: root)?.id == "islands")
        #expect(Locator.smallestNode(containing: 0.5, 0.5, in: root) == nil)
        #expect(Locator.smallestNode(containing: -40, -40, in: root) == nil)
    }

    @Test func boundaryJSONRoundTrips() throws {
        let json = #"{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]]]}"#
        let boundary = try JSONDecoder().decode(Boundary.self, from: Data(json.utf8))
        #expect(boundary.isMulti)
        let again = try JSONDecoder().decode(Boundary.self, from: JSONEncoder().encode(boundary))
        #expect(again == boundary)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(Boundary.self, from: Data(#"{"type":"Point","coordinates":[0,0]}"#.utf8))
        }
    }
}
