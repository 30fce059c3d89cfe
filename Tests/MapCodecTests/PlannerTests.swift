import Foundation
import MapTestSupport
import Testing

@testable import MapLoader

/// The planner is pure: these tables need no I/O.
@Suite struct PlannerTests {
    static func artifact(_ tree: String, size: Int64 = 1000, patches: [PatchEdge] = []) -> Artifact {
        Artifact(
            sha256: String(repeating: String(tree.prefix(1)), count: 64), size: size, format: .tarZstd, unpackedSize: size * 3,
            files: 3, treeHash: tree, patches: patches)
    }

    static func edge(_ from: String, _ to: String, _ size: Int64) -> PatchEdge {
        PatchEdge(
            from: "v-\(from)", to: "v-\(to)", sha256: String(repeating: "e", count: 64), size: size,
            fromTreeHash: from, toTreeHash: to)
    }

    static func manifest(_ artifacts: [String: Artifact], leaf: String = "a") -> Manifest {
        Manifest(
            version: "v3",
            groups: [
                DataGroup(id: "base", title: "Base", required: true, default: true),
                DataGroup(id: "poi", title: "POI"),
            ],
            root: PackageNode(
                id: "world", title: "World",
                children: [
                    PackageNode(id: leaf, title: "A", artifacts: artifacts),
                    PackageNode(id: "other", title: "B", artifacts: ["base": artifact("o")]),
                ]))
    }

    static func installed(_ groups: [String: String]) -> InstalledState {
        InstalledState(
            version: "v1", manifest: nil, generation: 1, committed: Date(),
            packages: [
                "a": groups.mapValues { InstalledGroup(artifact: "x", treeHash: $0, files: 3, size: 10) }
            ])
    }

    /// Sums of sizes saturate instead of trapping, even on numbers no validated manifest
    /// carries (the site's numbers are range-checked before planning; this is the second line).
    @Test func sumsOfHugeSizesSaturate() {
        let huge = Artifact(
            sha256: String(repeating: "a", count: 64), size: 5_000_000_000_000_000_000, format: .tarZstd,
            unpackedSize: 9_000_000_000_000_000_000, files: 1 << 62, treeHash: "t3")
        let plan = Planner.plan(
            installed: .empty, manifest: Self.manifest(["base": huge, "poi": huge]),
            packages: ["a"], selection: ["base", "poi"], strategy: .delta)
        #expect(plan.steps.count == 2)
        #expect(plan.downloadBytes == .max)
        #expect(plan.peakBytes == .max)
        #expect(Planner.diskBytes(huge) == .max)
    }

    @Test func notInstalledGroupIsInstalledInFull() {
        let plan = Planner.plan(
            installed: .empty, manifest: Self.manifest(["base": Self.artifact("t3")]),
            packages: ["a"], selection: ["base"], strategy: .delta)
        #expect(plan.steps.map(\.action) == [.install])
        #expect(plan.steps[0].method == .full)
        #expect(plan.downloadBytes == 1000)
        #expect(plan.peakBytes == 1000 + 3000 + 3 * 4096, "download + unpacked bytes + a block per file")
    }

    @Test func unchangedGroupCostsNothing() {
        let plan = Planner.plan(
            installed: Self.installed(["base": "t3"]), manifest: Self.manifest(["base": Self.artifact("t3")]),
            packages: ["a"], selection: ["base"], strategy: .delta)
        #expect(plan.steps.map(\.action) == [.keep])
        #expect(plan.downloadBytes == 0)
        #expect(!plan.changesFiles)
    }

    /// On a file system without hard links (FAT and exFAT cards) an unchanged group is
    /// copied into the new version and a patched one's unchanged files too; the plan counts
    /// the copies, unless the file system clones (then they cost nothing).
    @Test func withoutHardLinksCarriedOverFilesAreCounted() {
        var edge = Self.edge("t1", "t3", 100)
        edge.writeBytes = 500
        let manifest = Self.manifest(["base": Self.artifact("t3", patches: [edge]), "poi": Self.artifact("p3")])
        let installed = Self.installed(["base": "t1", "poi": "p3"])
        func peak(canClone: Bool, canLink: Bool) -> Int64 {
            Planner.plan(
                installed: installed, manifest: manifest, packages: ["a"], selection: ["base", "poi"], strategy: .delta,
                canClone: canClone, canLink: canLink
            ).peakBytes
        }
        let tree = Int64(3000 + 3 * 4096)  // one group's files on disk
        #expect(peak(canClone: false, canLink: true) == 100 + 500, "links: the patch and the file it changes")
        #expect(peak(canClone: false, canLink: false) == 100 + tree + tree, "copies: the patched tree whole, the kept one too")
        #expect(peak(canClone: true, canLink: false) == 100 + 500, "clones cost what links cost")
    }

    @Test func chainOfAdjacentPatchesIsTaken() {
        let target = Self.artifact("t3", patches: [Self.edge("t1", "t2", 100), Self.edge("t2", "t3", 150)])
        let plan = Planner.plan(
            installed: Self.installed(["base": "t1"]), manifest: Self.manifest(["base": target]),
            packages: ["a"], selection: ["base"], strategy: .delta)
        #expect(plan.steps[0].method == .delta)
        // Labelled from the installed version (v1) through the patches' target versions.
        #expect(plan.steps[0].chain == ["v1", "v-t2", "v-t3"])
        #expect(plan.downloadBytes == 250)
        #expect(plan.fullBytes == 1000)
    }

    /// A patch that needs a codec the client lacks (LZMA2 in an app build without liblzma)
    /// is left out before planning: the other chain, else the full archive, never a download
    /// that cannot apply. Edges that name no codec (older manifests) stay.
    @Test func aPatchNeedingACodecTheClientLacksIsNotPlanned() {
        var lzmaDirect = Self.edge("t1", "t3", 100)
        lzmaDirect.codecs = ["lzma"]
        let viaZstd = [Self.edge("t1", "t2", 150), Self.edge("t2", "t3", 150)]
        func step(_ patches: [PatchEdge], decodes: Set<String>) -> GroupStep {
            let context = PlanningContext(
                catalog: Catalog(serial: 1, current: "v3", versions: []),
                manifest: Self.manifest(["base": Self.artifact("t3", patches: patches)]),
                state: Self.installed(["base": "t1"]), settings: Settings(), selection: ["base"], decodes: decodes)
            return Planner.plan(
                installed: context.state, manifest: context.manifest, packages: ["a"], selection: ["base"], strategy: .delta
            ).steps[0]
        }
        #expect(step([lzmaDirect] + viaZstd, decodes: ["lzma"]).downloadBytes == 100)
        let without = step([lzmaDirect] + viaZstd, decodes: [])
        #expect(without.method == .delta && without.downloadBytes == 300, "the chain every build applies")
        #expect(step([lzmaDirect], decodes: []).method == .full)
        #expect(step([Self.edge("t1", "t3", 100)], decodes: []).method == .delta, "an edge naming no codec")
    }

    @Test func aGroupUnchangedInBetweenIsLabelledFromTheInstalledVersion() {
        // The group's files did not change in v2, so its only patch starts at v2's files,
        // which are the installed ones: the user reads v1→v3, not v2→v3.
        let edge = PatchEdge(
            from: "v2", to: "v3", sha256: String(repeating: "e", count: 64), size: 50,
            fromTreeHash: "t1", toTreeHash: "t3")
        let plan = Planner.plan(
            installed: Self.installed(["base": "t1"]),
            manifest: Self.manifest(["base": Self.artifact("t3", patches: [edge])]),
            packages: ["a"], selection: ["base"], strategy: .delta)
        #expect(plan.steps[0].chain == ["v1", "v3"])
    }

    @Test func cheaperDirectEdgeBeatsTheChain() {
        let target = Self.artifact("t3", patches: [Self.edge("t1", "t2", 100), Self.edge("t2", "t3", 150), Self.edge("t1", "t3", 180)])
        let plan = Planner.plan(
            installed: Self.installed(["base": "t1"]), manifest: Self.manifest(["base": target]),
            packages: ["a"], selection: ["base"], strategy: .delta)
        #expect(plan.steps[0].chain == ["v1", "v-t3"])
        #expect(plan.downloadBytes == 180)
    }

    @Test func chainDearerThanFullFallsBackToFull() {
        let target = Self.artifact("t3", size: 200, patches: [Self.edge("t1", "t2", 100), Self.edge("t2", "t3", 150)])
        let plan = Planner.plan(
            installed: Self.installed(["base": "t1"]), manifest: Self.manifest(["base": target]),
            packages: ["a"], selection: ["base"], strategy: .delta)
        #expect(plan.steps[0].method == .full)
        #expect(plan.steps[0].reason.contains("cost more"))
    }

    @Test func noChainOrFullStrategyOrLocalChangesMeanFull() {
        let target = Self.artifact("t3", patches: [Self.edge("t2", "t3", 100)])
        let manifest = Self.manifest(["base": target])
        let noChain = Planner.plan(
            installed: Self.installed(["base": "t1"]), manifest: manifest,
            packages: ["a"], selection: ["base"], strategy: .delta)
        #expect(noChain.steps[0].method == .full)
        #expect(noChain.steps[0].reason.contains("no patch chain"))
        let full = Planner.plan(
            installed: Self.installed(["base": "t2"]), manifest: manifest,
            packages: ["a"], selection: ["base"], strategy: .full)
        #expect(full.steps[0].method == .full)
        let broken = Planner.plan(
            installed: Self.installed(["base": "t2"]), manifest: manifest, packages: ["a"],
            selection: ["base"], strategy: .delta, inconsistent: [.init("a", "base")])
        #expect(broken.steps[0].method == .full)
        #expect(broken.steps[0].reason.contains("changed locally"))
    }

    @Test func selectionChangesAddAndRemoveGroups() {
        let manifest = Self.manifest(["base": Self.artifact("t3"), "poi": Self.artifact("p3")])
        let plan = Planner.plan(
            installed: Self.installed(["base": "t3"]), manifest: manifest,
            packages: ["a"], selection: ["base", "poi"], strategy: .delta)
        #expect(plan.steps.map { "\($0.group):\($0.action.rawValue)" } == ["base:keep", "poi:install"])
        let removal = Planner.plan(
            installed: Self.installed(["base": "t3", "poi": "p3"]), manifest: manifest,
            packages: ["a"], selection: ["base"], strategy: .delta)
        #expect(removal.steps.map { "\($0.group):\($0.action.rawValue)" } == ["base:keep", "poi:remove"])
    }

    @Test func scopeKeepsOtherPackagesAsTheyAre() {
        let manifest = Self.manifest(["base": Self.artifact("t3"), "poi": Self.artifact("p3")])
        let plan = Planner.plan(
            installed: Self.installed(["base": "t3"]), manifest: manifest, packages: ["a", "other"],
            selection: ["base", "poi"], strategy: .full, scope: ["other"])
        #expect(plan.steps.map { "\($0.name):\($0.action.rawValue)" } == ["a/base:keep", "other/base:install"])
    }

    @Test func unpublishedPackageIsRemoved() {
        var state = Self.installed(["base": "t3"])
        state.packages["gone"] = ["base": InstalledGroup(artifact: "x", treeHash: "g", files: 1, size: 1)]
        let plan = Planner.plan(
            installed: state, manifest: Self.manifest(["base": Self.artifact("t3")]),
            packages: ["a", "gone"], selection: ["base"], strategy: .delta)
        #expect(plan.steps.first { $0.package == "gone" }?.action == .remove)
    }
}
