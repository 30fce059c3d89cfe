import Foundation
import MapTestSupport
import Testing

@testable import MapLoader

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Tags and coverage maps: what owners attach to their maps and how they see them.
@Suite struct TagAndCoverageTests {
    @Test func tagsAreKeptAcrossUpdatesAndRemovedWithThePackage() async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["de-berlin", "ch"])
        await #expect(throws: MapLoaderError.notInstalled("de-hamburg")) { try await loader.setTags(["a": "b"], on: "de-hamburg") }
        await #expect(throws: MapLoaderError.self) { try await loader.setTags(["a=b": "c"], on: "de-berlin") }
        #expect(
            try await loader.setTags(["trip": "2026-summer", "owner": "fleet-7"], on: "de-berlin") == ["trip": "2026-summer", "owner": "fleet-7"])
        #expect(try await loader.setTags(["owner": nil], on: "de-berlin") == ["trip": "2026-summer"])
        try site.publish(2)
        #expect(try await loader.performUpdate().committed)
        #expect(try await loader.tags(of: "de-berlin") == ["trip": "2026-summer"])
        #expect(try await loader.package("de-berlin").tags == ["trip": "2026-summer"])
        #expect(try await loader.package("ch").tags == [:])
        try await loader.uninstall(["de-berlin"])
        try await loader.install(["de-berlin"])
        #expect(try await loader.tags(of: "de-berlin") == [:])
    }

    @Test func coverageGeoJSONFollowsRFC7946() async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["de-berlin"])
        let coverage = try await loader.coverage()
        #expect(coverage.areas.map(\.package.id) == ["de-berlin", "de-hamburg", "ch"])
        let json = try #require(try JSONSerialization.jsonObject(with: coverage.geoJSON()) as? [String: Any])
        #expect(json["type"] as? String == "FeatureCollection")
        let features = try #require(json["features"] as? [[String: Any]])
        #expect(features.count == 3)
        for feature in features {
            #expect(feature["type"] as? String == "Feature")
            let geometry = try #require(feature["geometry"] as? [String: Any])
            let rings = try #require((geometry["coordinates"] as? [[[Double]]]))
            #expect(geometry["type"] as? String == "Polygon")
            for (index, ring) in rings.enumerated() {
                #expect(ring.count >= 4 && ring.first == ring.last)  // closed
                #expect((Coverage.signedArea(ring) > 0) == (index == 0))  // outer CCW, holes CW
            }
            let properties = try #require(feature["properties"] as? [String: Any])
            let expected = properties["id"] as? String == "de-berlin" ? "installed" : "notInstalled"
            #expect(properties["state"] as? String == expected)
        }
        let berlin = try #require(features.first { ($0["properties"] as? [String: Any])?["id"] as? String == "de-berlin" })
        let properties = try #require(berlin["properties"] as? [String: Any])
        #expect(properties["version"] as? String == "v1")
        #expect(properties["groups"] as? [String] == ["base", "poi"])
        #expect((properties["metadata"] as? [String: Any])?["iso"] as? String == "DE-BE")
        #expect(try await loader.coverage(installedOnly: true).areas.map(\.package.id) == ["de-berlin"])
    }

    @Test func ringsAreClosedAndWoundWhateverThePublisherWrote() {
        // Clockwise and open, as a publisher may write it.
        let clockwise: [[Double]] = [[0, 0], [0, 1], [1, 1], [1, 0]]
        let outer = Coverage.normalized(clockwise, counterclockwise: true)
        #expect(outer.first == outer.last && outer.count == 5)
        #expect(Coverage.signedArea(outer) > 0)
        let hole = Coverage.normalized(outer, counterclockwise: false)
        #expect(Coverage.signedArea(hole) < 0)
    }

    @Test func coverageSVGIsWellFormedWithOneShapePerPackage() async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["ch"])
        let coverage = try await loader.coverage()
        let svg = coverage.svg(width: 800)
        let counter = ShapeCounter()
        let parser = XMLParser(data: Data(svg.utf8))
        parser.delegate = counter
        #expect(parser.parse(), "the SVG is not well-formed XML: \(parser.parserError.map(String.init(describing:)) ?? "")")
        #expect(counter.root == "svg")
        #expect(counter.packages == coverage.areas.map(\.package.id))
        #expect(counter.states["ch"] == "installed" && counter.states["de-berlin"] == "notInstalled")
        #expect(Set(counter.legend) == ["installed", "partly installed", "update available", "damaged: run repair", "not installed"])
    }

    @Test func tagAndCoverageThroughTheCLI() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        #expect(try await CLI.run(["install", "de-berlin"], site: site, data: data).status == 0)
        #expect(try await CLI.run(["tag", "de-berlin", "trip=2026-summer", "owner=fleet-7"], site: site, data: data).status == 0)
        #expect(try await CLI.run(["tag", "de-berlin", "--remove", "owner"], site: site, data: data).stdout == "trip=2026-summer\n")
        #expect(try await CLI.run(["info", "de-berlin"], site: site, data: data).stdout.contains("trip=2026-summer"))
        #expect(try await CLI.run(["tag", "de-berlin", "oops"], site: site, data: data).status == 64)
        #expect(try await CLI.run(["tag", "ch", "a=b"], site: site, data: data).status != 0)
        let geojson = site.dir.path("c.geojson")
        let svg = site.dir.path("c.svg")
        let written = try await CLI.run(["coverage", "--geojson", geojson.path, "--svg", svg.path], site: site, data: data)
        #expect(written.status == 0)
        #expect(written.stderr.contains("wrote 3 package area(s)"))
        let parsed = try JSONSerialization.jsonObject(with: Data(contentsOf: geojson)) as? [String: Any]
        #expect((parsed?["features"] as? [Any])?.count == 3)
        #expect(try String(contentsOf: svg, encoding: .utf8).contains("data-id=\"de-berlin\""))
        let piped = try await CLI.run(["coverage", "--installed", "--geojson", "-"], site: site, data: data)
        #expect(((try JSONSerialization.jsonObject(with: Data(piped.stdout.utf8)) as? [String: Any])?["features"] as? [Any])?.count == 1)
        #expect(try await CLI.run(["coverage"], site: site, data: data).status == 64)
    }
}

/// Counts the package shapes and legend entries of an SVG.
private final class ShapeCounter: NSObject, XMLParserDelegate {
    var root: String?
    var packages: [String] = []
    var states: [String: String] = [:]
    var legend: [String] = []
    private var inText = false

    func parser(
        _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        if root == nil { root = name }
        if name == "path", attributes["class"] == "package", let id = attributes["data-id"] {
            packages.append(id)
            states[id] = attributes["data-state"]
        }
        inText = name == "text"
        if inText { legend.append("") }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if inText { legend[legend.count - 1] += string }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        inText = false
    }
}
