import Foundation
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// `maploader prune`: old versions leave the catalog; files nothing kept needs go after a
/// grace period, so clients reading the previous catalog still find theirs.
@Suite struct PruneTests {
    @Test func pruneKeepsWhatKeptVersionsNeedAndWaitsOutTheGracePeriod() async throws {
        let site = try TestSite(revisions: [1, 2], patchDepth: 1)
        let older = site.dir.path("older")
        try await site.loader(dataDirectory: older).install(["germany"])  // a client at v2
        try site.publish(3, patchDepth: 1)
        let catalogBefore = try Data(contentsOf: site.site.appendingPathComponent("catalog.json"))
        let key = site.dir.path("publisher.key")

        let dry = try Publisher.prune(site: site.site, keep: 2, apply: false, grace: 3600, keyFile: key)
        #expect(dry.kept == ["v3", "v2"] && dry.dropped == ["v1"] && !dry.applied)
        #expect(!dry.unreferenced.isEmpty)
        #expect(try Data(contentsOf: site.site.appendingPathComponent("catalog.json")) == catalogBefore)
        for item in dry.unreferenced { #expect(FileManager.default.fileExists(atPath: site.site.appendingPathComponent(item.path).path)) }

        // First run: v1 leaves the (re-signed) catalog; its files wait out the grace period.
        let now = Date()
        let first = try Publisher.prune(site: site.site, keep: 2, apply: true, grace: 3600, keyFile: key, now: now)
        #expect(first.deleted.isEmpty)
        let catalog = try JSONCoding.decode(Catalog.self, from: Data(contentsOf: site.site.appendingPathComponent("catalog.json")))
        #expect(catalog.versions.map(\.version).sorted() == ["v2", "v3"])
        #expect(try await site.loader().checkForUpdate().currentVersion == "v3")  // the signature still verifies

        // Two hours later: they go, and nothing a kept version needs went with them.
        let second = try Publisher.prune(
            site: site.site, keep: 2, apply: true, grace: 3600, keyFile: key,
            now: now.addingTimeInterval(7200))
        #expect(Set(second.deleted) == Set(dry.unreferenced.map(\.path)))
        #expect(second.deletedBytes > 0)
        for path in second.deleted { #expect(!FileManager.default.fileExists(atPath: site.site.appendingPathComponent(path).path)) }
        // Manifest deltas that lead to a kept version stay (v2 from v1, v3 from v1 and v2).
        let keptManifests = catalog.versions.compactMap { $0.unpacked?.sha256 }
        let manifestDeltas = try FileManager.default.contentsOfDirectory(atPath: site.site.appendingPathComponent(SiteLayout.deltas).path)
            .filter { $0.hasPrefix("manifest-") }
        #expect(manifestDeltas.count == 3 && manifestDeltas.allSatisfy { name in keptManifests.contains { name.hasPrefix("manifest-\($0)-from-") } })
        let update = try await site.loader(dataDirectory: older).performUpdate()
        #expect(update.toVersion == "v3" && update.steps.contains { $0.method == .delta })
        let fresh = site.loader()
        try await fresh.install(["world"])
        #expect(try await fresh.verify().ok)
        #expect(throws: (any Error).self) { try Publisher.prune(site: site.site, keep: 0, apply: true, grace: 0, keyFile: key) }
    }

    @Test func pruneThroughTheCLI() async throws {
        let site = try TestSite(revisions: [1, 2, 3], patchDepth: 1)
        let key = site.dir.path("publisher.key").path
        let dry = try await CLI.run(["prune", site.site.path, "--keep", "1"])
        #expect(dry.status == 0 && dry.stdout.contains("would drop v2, v1"))
        let applied = try await CLI.run(["prune", site.site.path, "--keep", "1", "--delete", "--grace-hours", "0", "--key", key, "--json"])
        #expect(applied.status == 0)
        let report = try JSONSerialization.jsonObject(with: Data(applied.stdout.utf8)) as? [String: Any]
        #expect((report?["deletedBytes"] as? Int ?? 0) > 0)
        #expect(try await CLI.run(["prune", site.site.path, "--keep", "0"]).status == 64)
        #expect(try await CLI.run(["install", "de-berlin"], site: site, data: site.dir.path("data")).status == 0)
    }
}
