import Foundation
import MapTestSupport
import Testing

@testable import MapLoader

/// The publisher's fields of a package (its node's `metadata` in the release's tree) read
/// with the types an app expects, online and offline.
@Suite struct PackageMetadataTests {
    static func expectBerlinsFields(_ berlin: PackageStatus, _ when: String) {
        #expect(berlin.metadataKeys == ["capital", "iso", "names", "population"], "\(when)")
        #expect(berlin.metadata("iso", as: String.self) == "DE-BE", "\(when)")
        #expect(berlin.metadata("population", as: Int.self) == 3_755_251, "\(when)")
        #expect(berlin.metadata("capital", as: Bool.self) == true, "\(when)")
        #expect(berlin.metadata("names", as: [String: String].self)?["ru"] == "Берлин", "\(when)")
        // A field of another type, or none, reads as nil rather than a wrong value.
        #expect(berlin.metadata("iso", as: Int.self) == nil, "\(when)")
        #expect(berlin.metadata("area", as: Double.self) == nil, "\(when)")
        let json = try? JSONSerialization.jsonObject(with: berlin.metadataJSON ?? Data()) as? [String: Any]
        #expect(json?["iso"] as? String == "DE-BE", "\(when)")
    }

    @Test func aPackagesPublisherFieldsReadTypedOnlineAndOffline() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let online = site.loader(dataDirectory: data)
        // Before installing, from the site's manifest.
        Self.expectBerlinsFields(try await online.package("de-berlin"), "online, not installed")
        try await online.install(["de-berlin"])
        site.server.stop()
        let offline = MapLoader(
            configuration: .init(server: site.url, dataDirectory: data, retry: .init(attempts: 1), trust: TrustPolicy(keys: [site.publicKey])))
        let tree = try await offline.packageTree()
        #expect(tree.offline != nil)
        Self.expectBerlinsFields(try #require(tree.packages.first { $0.id == "de-berlin" }), "offline")
        let hamburg = try await offline.package("de-hamburg")
        #expect(hamburg.metadataKeys.isEmpty && hamburg.metadataJSON == nil)
    }
}
