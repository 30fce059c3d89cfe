import Foundation
import MapTestSupport
import Testing

@testable import MapLoader

/// Updates through patch chains against a real server, with every fallback.
@Suite struct DeltaUpdateTests {
    /// Installs germany at v1, then publishes `revisions` with `depth`.
    func prepared(depth: Int, revisions: [Int] = [2, 3]) async throws -> (TestSite, MapLoader) {
        let site = try TestSite(revisions: [1], patchDepth: depth)
        let loader = site.loader()
        try await loader.install(["germany"])
        for revision in revisions { try site.publish(revision, patchDepth: depth) }
        return (site, loader)
    }

    func step(_ plan: Plan, _ name: String) throws -> GroupStep {
        try #require(plan.steps.first { $0.name == name })
    }

    @Test func chainOfAdjacentPatchesReachesTheNewestVersion() async throws {
        let (site, loader) = try await prepared(depth: 1)
        let check = try await loader.checkForUpdate()
        #expect(check.updateAvailable)
        let berlin = try step(check.plan, "de-berlin/base")
        #expect(berlin.method == .delta)
        #expect(berlin.chain == ["v1", "v2", "v3"])
        #expect(check.plan.downloadBytes < check.plan.fullBytes)
        site.server.resetStatistics()
        let report = try await loader.performUpdate()
        #expect(report.committed)
        #expect(report.downloadedBytes == check.plan.downloadBytes)
        let blobBytes = site.server.statistics.bodyBytesSentByPath.filter { $0.key.contains("/blobs/") }.values.reduce(0, +)
        #expect(blobBytes == report.downloadedBytes, "bytes measured at the server")
        for package in ["de-berlin", "de-hamburg"] {
            for group in ["base", "poi"] {
                #expect(try snapshot(loader.currentFolder.appendingPathComponent("\(package)/\(group)")) == snapshot(site.release(3, package, group)))
            }
        }
        #expect(try await loader.verify().ok)
    }

    /// A device two versions behind, within the patch depth: v3's manifest holds the direct
    /// edge v1→v3 (and only edges into v3), so nothing older is read and the direct patch
    /// is taken.
    @Test func aDeviceWithinThePatchDepthReadsOneManifestAndTakesTheDirectPatch() async throws {
        let (site, loader) = try await prepared(depth: 3)
        let edges = try #require(site.manifest("v3").root.leaves.first { $0.id == "de-berlin" }?.artifacts?["base"]).patches ?? []
        let direct = try #require(edges.first { $0.from == "v1" && $0.to == "v3" })
        #expect(edges.allSatisfy { $0.to == "v3" }, "a manifest does not carry older versions' edges")
        let plan = try await loader.checkForUpdate().plan
        let berlin = try step(plan, "de-berlin/base")
        #expect(berlin.downloadBytes == direct.size && berlin.chain == ["v1", "v3"])
        #expect(site.server.statistics.bodyBytesSentByPath["/versions/v2/manifest.json.zst"] == nil, "v2's manifest was read")
    }

    @Test func missingPatchFallsBackToTheFullArchive() async throws {
        let (site, loader) = try await prepared(depth: 1, revisions: [2])
        let plan = try await loader.checkForUpdate().plan
        let patch = try #require(step(plan, "de-berlin/base").patches.first)
        try FileManager.default.removeItem(at: site.site.appendingPathComponent(SiteLayout.blob(patch.sha256)))
        let report = try await loader.performUpdate()
        let berlin = try step(Plan(version: "v2", steps: report.steps), "de-berlin/base")
        #expect(berlin.method == .full)
        #expect(berlin.reason.contains("fell back") && berlin.reason.contains("404"))
        #expect(try step(Plan(version: "v2", steps: report.steps), "de-hamburg/poi").method == .delta)
        #expect(try snapshot(loader.currentFolder.appendingPathComponent("de-berlin/base")) == snapshot(site.release(2, "de-berlin", "base")))
    }

    @Test func corruptedPatchFallsBackToTheFullArchive() async throws {
        let (site, loader) = try await prepared(depth: 1, revisions: [2])
        let plan = try await loader.checkForUpdate().plan
        let patch = try #require(step(plan, "de-berlin/base").patches.first)
        let url = site.site.appendingPathComponent(SiteLayout.blob(patch.sha256))
        var bytes = try Data(contentsOf: url)
        bytes[bytes.count - 3] ^= 0xFF
        try bytes.write(to: url)
        let report = try await loader.performUpdate()
        let berlin = try step(Plan(version: "v2", steps: report.steps), "de-berlin/base")
        #expect(berlin.method == .full)
        #expect(berlin.reason.contains("SHA-256"))
        #expect(try snapshot(loader.currentFolder.appendingPathComponent("de-berlin/base")) == snapshot(site.release(2, "de-berlin", "base")))
    }

    @Test func locallyModifiedFilesAreShownInconsistentAndRefetchedInFull() async throws {
        let (site, loader) = try await prepared(depth: 1, revisions: [])
        let file = loader.currentFolder.appendingPathComponent("de-berlin/base/meta.json")
        try Data("{\"edited\":true}".utf8).write(to: file)
        let tree = try await loader.packageTree()
        #expect(tree.packages.first { $0.id == "de-berlin" }?.state == .inconsistent)
        try site.publish(2, patchDepth: 1)
        let plan = try await loader.checkForUpdate().plan
        let berlin = try step(plan, "de-berlin/base")
        #expect(berlin.method == .full)
        #expect(berlin.reason.contains("changed locally"))
        #expect(try step(plan, "de-hamburg/poi").method == .delta)
        try await loader.performUpdate()
        #expect(try await loader.verify().ok)
        #expect(try snapshot(loader.currentFolder.appendingPathComponent("de-berlin/base")) == snapshot(site.release(2, "de-berlin", "base")))
    }

    @Test func updateWhenCurrentIsANoOpWithZeroBytes() async throws {
        let (site, loader) = try await prepared(depth: 1, revisions: [])
        site.server.resetStatistics()
        let check = try await loader.checkForUpdate()
        #expect(!check.updateAvailable)
        #expect(check.plan.downloadBytes == 0)
        let report = try await loader.performUpdate()
        #expect(!report.committed)
        #expect(report.downloadedBytes == 0)
        #expect(site.server.statistics.bodyBytesSentByPath.keys.allSatisfy { !$0.contains("/blobs/") })
    }

    @Test func updateAppliesSelectionChanges() async throws {
        let (site, loader) = try await prepared(depth: 1, revisions: [])
        try await loader.deselectDataGroup("poi")
        try await loader.selectDataGroup("transit")
        try site.publish(2, patchDepth: 1)
        let plan = try await loader.checkForUpdate().plan
        #expect(try step(plan, "de-berlin/poi").action == .remove)
        #expect(try step(plan, "de-berlin/transit").action == .install)
        try await loader.performUpdate()
        for package in ["de-berlin", "de-hamburg"] {
            let groups = try FileManager.default.contentsOfDirectory(atPath: loader.currentFolder.appendingPathComponent(package).path)
            #expect(Set(groups) == ["base", "transit"])
        }
        #expect(try snapshot(loader.currentFolder.appendingPathComponent("de-berlin/transit")) == snapshot(site.release(2, "de-berlin", "transit")))
    }

    @Test func twoPackagesSwitchTogetherInOneGeneration() async throws {
        let (site, loader) = try await prepared(depth: 1, revisions: [2])
        let store = Store(root: loader.configuration.dataDirectory)
        let before = try store.state()
        let unchanged = loader.currentFolder.appendingPathComponent("de-hamburg/base/roads.bin")
        let inodeBefore = try FileManager.default.attributesOfItem(atPath: unchanged.resolvingSymlinksInPath().path)[.systemFileNumber] as? Int
        let report = try await loader.performUpdate()
        let changed = Set(report.steps.filter { $0.action == .update }.map(\.package))
        #expect(changed == ["de-berlin", "de-hamburg"])
        let after = try store.state()
        #expect(after.generation == before.generation + 1, "one switch for both packages")
        #expect(after.version == "v2")
        #expect(try snapshot(loader.currentFolder.appendingPathComponent("de-hamburg/poi")) == snapshot(site.release(2, "de-hamburg", "poi")))
        // The unchanged group was carried over as hard links: the same inode, not a copy.
        let inodeAfter = try FileManager.default.attributesOfItem(atPath: unchanged.resolvingSymlinksInPath().path)[.systemFileNumber] as? Int
        #expect(inodeBefore != nil && inodeAfter == inodeBefore)
    }
}
