import Foundation
import MapTestSupport
import Testing

@testable import MapLoader

/// Install, uninstall and groups through the actor, against a real HTTP server.
@Suite struct InstallTests {
    @Test func installLeafGivesByteIdenticalFilesAndStates() async throws {
        let site = try TestSite()
        let loader = site.loader()
        let log = EventLog()
        let events = loader.events()
        let collector = Task { for await event in events { await log.append(event) } }

        let report = try await loader.install(["de-berlin"])
        #expect(report.committed)
        #expect(report.downloadedBytes > 0)
        for group in ["base", "poi"] {
            #expect(try snapshot(loader.currentFolder.appendingPathComponent("de-berlin/\(group)")) == snapshot(site.release(1, "de-berlin", group)))
        }
        // transit is not selected by default.
        #expect(!FileManager.default.fileExists(atPath: loader.currentFolder.appendingPathComponent("de-berlin/transit").path))

        let tree = try await loader.packageTree()
        let states = Dictionary(uniqueKeysWithValues: tree.packages.map { ($0.id, $0.state) })
        #expect(states["de-berlin"] == .installed)
        #expect(states["de-hamburg"] == .notInstalled)
        #expect(states["germany"] == .partiallyInstalled)
        #expect(states["world"] == .partiallyInstalled)
        let berlin = try #require(tree.packages.first { $0.id == "de-berlin" })
        #expect(berlin.sizeOnDisk > 40_000)
        #expect(berlin.version == "v1")

        loader.closeEventStreams()
        await collector.value
        let seen = await log.events
        #expect(seen.first == .started(.install))
        #expect(seen.contains(.installed(["de-berlin"])))
        #expect(seen.contains { if case .progress(let p) = $0 { return p.phase == .download && p.completedBytes > 0 } else { return false } })
        #expect(seen.contains(.finished(.install)))
    }

    @Test func innerNodeInstallsAllLeavesAndUninstallRemovesThem() async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["germany"])
        let installed = try await loader.packageTree().packages.filter { $0.state == .installed }.map(\.id)
        #expect(Set(installed) == ["germany", "de-berlin", "de-hamburg"])

        try await loader.uninstall(["de-hamburg"])
        #expect(!FileManager.default.fileExists(atPath: loader.currentFolder.appendingPathComponent("de-hamburg").path))
        #expect(try snapshot(loader.currentFolder.appendingPathComponent("de-berlin/base")) == snapshot(site.release(1, "de-berlin", "base")))

        try await loader.uninstall(["europe"])
        let after = try await loader.packageTree()
        #expect(after.packages.allSatisfy { $0.state == .notInstalled })
        await #expect(throws: MapLoaderError.notInstalled("de-berlin")) { try await loader.uninstall(["de-berlin"]) }
    }

    @Test func groupSelectionAppliesToInstallsAndRequiredGroupsStay() async throws {
        let site = try TestSite()
        let loader = site.loader()
        await #expect(throws: MapLoaderError.requiredGroup("base")) { try await loader.deselectDataGroup("base") }
        await #expect(throws: MapLoaderError.unknownGroup("roads", known: ["base", "poi", "transit"])) {
            try await loader.selectDataGroup("roads")
        }
        try await loader.deselectDataGroup("poi")
        try await loader.selectDataGroup("transit")
        let groups = try await loader.dataGroups()
        #expect(groups.filter(\.selected).map(\.group.id) == ["base", "transit"])
        try await loader.install(["de-hamburg"])
        let folders = try FileManager.default.contentsOfDirectory(atPath: loader.currentFolder.appendingPathComponent("de-hamburg").path)
        #expect(Set(folders) == ["base", "transit"])
    }

    @Test func installIsIdempotentAndDownloadsNothingTwice() async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["de-berlin"])
        site.server.resetStatistics()
        let again = try await loader.install(["de-berlin"])
        #expect(!again.committed)
        #expect(again.downloadedBytes == 0)
        #expect(site.server.statistics.bodyBytesSent < 4096, "only the catalog may be fetched again")
    }

    @Test func locateFindsTheSmallestPackage() async throws {
        let site = try TestSite()
        let loader = site.loader()
        #expect(try await loader.package(atLatitude: 52.52, longitude: 13.40)?.id == "de-berlin")
        #expect(try await loader.package(atLatitude: 46.9, longitude: 7.4)?.id == "ch")
        #expect(try await loader.package(atLatitude: -33.9, longitude: 18.4) == nil)
        await #expect(throws: MapLoaderError.self) { try await loader.package(atLatitude: 123, longitude: 0) }
    }
}

/// verify and repair.
@Suite struct RepairTests {
    @Test func verifyFindsChangesAndRepairRefetchesOnlyThem() async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["germany"])
        #expect(try await loader.verify().ok)

        let damaged = loader.currentFolder.appendingPathComponent("de-berlin/base/roads.bin")
        var bytes = try Data(contentsOf: damaged)
        bytes[100] ^= 1
        try bytes.write(to: damaged)
        try FileManager.default.removeItem(at: loader.currentFolder.appendingPathComponent("de-hamburg/poi/poi.csv"))

        let report = try await loader.verify()
        #expect(Set(report.problems.map { "\($0.package)/\($0.group)" }) == ["de-berlin/base", "de-hamburg/poi"])
        // The quick check (by the walk's stat of each file) sees a missing file, and a file
        // changed in place once its time is past the generation's commit.
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(3_600)], ofItemAtPath: damaged.path)
        let tree = try await loader.packageTree()
        #expect(tree.packages.first { $0.id == "de-hamburg" }?.state == .inconsistent)
        #expect(tree.packages.first { $0.id == "de-berlin" }?.state == .inconsistent)

        site.server.resetStatistics()
        let repaired = try await loader.repair()
        #expect(Set(repaired.steps.filter { $0.action == .update }.map(\.name)) == ["de-berlin/base", "de-hamburg/poi"])
        let fetched = site.server.statistics.bodyBytesSentByPath.filter { $0.key.contains("/blobs/") }
        #expect(fetched.count == 2, "only the two broken groups were downloaded")
        #expect(try await loader.verify().ok)
        #expect(try snapshot(loader.currentFolder.appendingPathComponent("de-berlin/base")) == snapshot(site.release(1, "de-berlin", "base")))
        #expect(try await loader.repair().committed == false)
    }
}
