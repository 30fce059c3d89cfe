import Foundation
import ManifestServer
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// Split manifests: a large tree is published as a small index plus parts, and a client
/// reads, per update, only the parts holding what it has installed.
@Suite struct SplitManifestTests {
    /// A signed site whose manifests split into one part per leaf, served on loopback.
    final class SplitSite: Sendable {
        let dir = TemporaryDirectory("maploader-split")
        let server: ManifestServer
        let url: String
        let key: PublicKey

        init() throws {
            key = try SigningKeyFile.generate(at: dir.path("publisher.key"))
            try FileManager.default.createDirectory(at: dir.path("site"), withIntermediateDirectories: true)
            server = ManifestServer(root: dir.path("site"))
            url = "http://127.0.0.1:\(try server.start())"
        }

        deinit { server.stop() }

        func publish(_ revision: Int) throws {
            try ReleaseBuilder.make(at: dir.path("r\(revision)"), revision: revision)
            var options = PublishOptions(version: "v\(revision)", level: 3, validity: 3600, keyFile: dir.path("publisher.key"))
            options.manifestPartLeaves = 1
            try Publisher.publish(release: dir.path("r\(revision)"), site: dir.path("site"), options: options)
        }

        func loader(_ data: URL) -> MapLoader {
            MapLoader(configuration: .init(server: url, dataDirectory: data, trust: TrustPolicy(keys: [key])))
        }

        /// The index of `version` as published.
        func index(_ version: String) throws -> Manifest {
            try Manifest.decode(Data(contentsOf: dir.path("site").appendingPathComponent(SiteLayout.manifest(version))))
        }

        /// Paths of parts the server has sent so far.
        func partsSent() throws -> Set<String> {
            let parts = try Set(
                (1...3).flatMap { revision -> [String] in
                    guard FileManager.default.fileExists(atPath: dir.path("site/versions/v\(revision)").path) else { return [] }
                    return try index("v\(revision)").stubs.map { "/" + SiteLayout.blob($0.part!.sha256) }
                })
            return Set(server.statistics.bodyBytesSentByPath.keys).intersection(parts)
        }
    }

    @Test func anUpdateReadsOnlyThePartsHoldingInstalledPackages() async throws {
        let site = try SplitSite()
        try site.publish(1)
        let index = try site.index("v1")
        #expect(index.formatVersion == Manifest.splitFormat)
        #expect(Set(index.stubs.map(\.id)) == ["de-berlin", "de-hamburg", "ch"])
        #expect(index.root.leaves.isEmpty)

        let data = site.dir.path("data")
        let loader = site.loader(data)
        try await loader.install(["de-berlin"])
        #expect(try await loader.packageTree().packages.map(\.id).contains("de-hamburg"))  // the whole tree, from parts
        #expect(try site.partsSent().count == 3)  // installing by name reads every part once

        // v2 changes de-berlin and de-hamburg: the update reads de-berlin's new part only.
        try site.publish(2)
        let before = try site.partsSent()
        let report = try await loader.performUpdate()
        #expect(report.toVersion == "v2" && report.committed)
        let berlinV2 = "/" + SiteLayout.blob(try #require(site.index("v2").stubs.first { $0.id == "de-berlin" }).part!.sha256)
        #expect(try site.partsSent().subtracting(before) == [berlinV2])
        #expect(try await loader.checkForUpdate().updateAvailable == false)

        // prune counts parts as referenced: v2's stay, v1's own go.
        let prune = try Publisher.prune(site: site.dir.path("site"), keep: 1, apply: false, grace: 0, keyFile: nil)
        let unreferenced = Set(prune.unreferenced.map { "/" + $0.path })
        #expect(unreferenced.contains("/" + SiteLayout.blob(try #require(index.stubs.first { $0.id == "de-berlin" }).part!.sha256)))
        #expect(try site.index("v2").stubs.allSatisfy { !unreferenced.contains("/" + SiteLayout.blob($0.part!.sha256)) })

        // The whole tree is still there for listing; an unchanged part is never fetched again.
        let hamburg = try #require(try await loader.packageTree().packages.first { $0.id == "de-hamburg" })
        #expect(hamburg.state == .notInstalled)
        let ch = "/" + SiteLayout.blob(try #require(site.index("v2").stubs.first { $0.id == "ch" }).part!.sha256)
        #expect(try site.index("v1").stubs.first { $0.id == "ch" }?.part == (try site.index("v2").stubs.first { $0.id == "ch" }?.part))
        #expect(site.server.statistics.bodyBytesSentByPath[ch] == index.stubs.first { $0.id == "ch" }?.part?.size)

        // gc keeps the installed version's parts: the installed manifest is whole offline.
        try await loader.collectGarbage()
        let catalog = try JSONCoding.decode(Catalog.self, from: Data(contentsOf: site.dir.path("site/catalog.json")))
        let cached = SiteClient.cachedManifest(try #require(catalog.entry("v2")).cacheKey, in: data.appendingPathComponent("cache/manifests"))
        #expect(cached?.root.leaves.map(\.id).sorted() == ["ch", "de-berlin", "de-hamburg"])
    }

    @Test func infoAndLocateReadOnlyThePartsTheyNeed() async throws {
        let site = try SplitSite()
        try site.publish(1)
        let index = try site.index("v1")
        func part(_ id: String) throws -> String { "/" + SiteLayout.blob(try #require(index.stubs.first { $0.id == id }).part!.sha256) }

        let info = site.loader(site.dir.path("info"))
        let berlin = try await info.package("de-berlin")
        #expect(berlin.isLeaf && berlin.offered.map(\.id).contains("base"))
        #expect(try site.partsSent() == [try part("de-berlin")])

        let locate = site.loader(site.dir.path("locate"))
        #expect(try await locate.package(atLatitude: 53.55, longitude: 10.0)?.id == "de-hamburg")
        #expect(try site.partsSent() == [try part("de-berlin"), try part("de-hamburg")])

        // An inner node of the index reads every part below it, so its state is whole.
        let germany = try await site.loader(site.dir.path("inner")).package("germany")
        #expect(germany.state == .notInstalled && germany.downloadSize > 0)
        #expect(try site.partsSent() == [try part("de-berlin"), try part("de-hamburg")])
    }

    @Test func aTamperedPartIsRefusedAndNothingChanges() async throws {
        let site = try SplitSite()
        try site.publish(1)
        let stub = try #require(site.index("v1").stubs.first { $0.id == "ch" })
        let file = site.dir.path("site").appendingPathComponent(SiteLayout.blob(stub.part!.sha256))
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count - 2] ^= 0x01
        try bytes.write(to: file)
        let data = site.dir.path("data")
        do {
            try await site.loader(data).install(["ch"])
            Issue.record("a tampered part was accepted")
        } catch {
            #expect("\(error)".contains("SHA-256"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: data.appendingPathComponent("current/ch").path))
    }

    @Test func anExportedStickCarriesEveryPart() async throws {
        let site = try SplitSite()
        try site.publish(1)
        let loader = site.loader(site.dir.path("data"))
        try await loader.install(["ch"])
        _ = try await loader.packageTree()
        let stick = site.dir.path("stick")
        try await loader.export(["ch"], to: stick)
        for stub in try site.index("v1").stubs {
            #expect(FileManager.default.fileExists(atPath: stick.appendingPathComponent(SiteLayout.blob(stub.part!.sha256)).path))
        }
        let offline = MapLoader(
            configuration: .init(
                server: stick.absoluteString, dataDirectory: site.dir.path("other"),
                trust: TrustPolicy(keys: [site.key])))
        try await offline.install(["ch"])
        #expect(try await offline.package("ch").state == .installed)
    }
}
