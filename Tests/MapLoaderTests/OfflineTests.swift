import Foundation
import MapTestSupport
import Testing

@testable import MapLoader

/// An offline map app shows what it has: with the server gone (or none configured), the
/// tree, one package, a point's package and the data groups come from the data directory.
@Suite struct OfflineTests {
    @Test(arguments: ["server stopped", "no server configured"])
    func readsWorkFromWhatIsInstalled(_ how: String) async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        try await site.loader(dataDirectory: data).install(["de-berlin"])
        _ = try await site.loader(dataDirectory: data).checkForUpdate()
        site.server.stop()
        let loader = MapLoader(
            configuration: .init(
                server: how == "server stopped" ? site.url : nil, dataDirectory: data,
                retry: .init(attempts: 1), trust: TrustPolicy(keys: [site.publicKey])))
        let tree = try await loader.packageTree()
        let offline = try #require(tree.offline)
        #expect(offline.catalogAccepted != nil)
        #expect(offline.reason.contains(how == "server stopped" ? "refused the connection" : "no server"))
        #expect(tree.packages.first { $0.id == "de-berlin" }?.state == .installed)
        #expect(tree.packages.first { $0.id == "de-hamburg" }?.state == .notInstalled)
        #expect(try await loader.package("de-berlin").version == "v1")
        #expect(try await loader.package(atLatitude: 52.52, longitude: 13.40)?.id == "de-berlin")
        #expect(try await loader.dataGroups().map(\.group.id).sorted() == ["base", "poi", "transit"])
        // A data group chosen offline is kept for the next update.
        try await loader.selectDataGroup("transit")
        #expect(try await loader.dataGroups().first { $0.group.id == "transit" }?.selected == true)
        await #expect(throws: MapLoaderError.unknownGroup("terrain", known: ["base", "poi", "transit"])) {
            try await loader.selectDataGroup("terrain")
        }
    }

    @Test func withNothingInstalledTheNetworkErrorStands() async throws {
        let dir = TemporaryDirectory()
        let loader = MapLoader(
            configuration: .init(
                server: "http://127.0.0.1:\(closedPort())", dataDirectory: dir.path("data"),
                trust: TrustPolicy(allowUnsigned: true)))
        await #expect(throws: MapLoaderError.self) { _ = try await loader.packageTree() }
    }
}
