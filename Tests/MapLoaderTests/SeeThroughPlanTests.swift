import Foundation
import MapPublisher
import MapTestSupport
import Synchronization
import Testing

@testable import MapLoader

/// A see-through decision seen from the client: the plan an app reads says why a file
/// stays byte-level.
@Suite struct SeeThroughPlanTests {
    /// The reason a file stays byte-level reaches the publisher's log and the client's
    /// update plan (`check-update --json`).
    @Test func whyAStreamStaysByteLevelIsInThePlan() async throws {
        let dir = TemporaryDirectory()
        let tree = ReleaseTree(
            groups: [DataGroup(id: "base", title: "Base", required: true, default: true)],
            root: PackageNode(id: "world", title: "World", children: [PackageNode(id: "places", title: "Places")]))
        for revision in 1...2 {
            let release = dir.path("r\(revision)")
            try FileManager.default.createDirectory(at: release, withIntermediateDirectories: true)
            try JSONCoding.encoder().encode(tree).write(to: release.appendingPathComponent("tree.json"))
            let data = release.appendingPathComponent("data/places/base")
            try await RawThread.run { try LargeFixtures.writeGeoJSONRelease(data, renamed: revision == 1 ? 0 : 40, flushEvery: 50_000) }
        }
        try await RawThread.run {
            try Publisher.publish(release: dir.path("r1"), site: dir.path("site"), options: .init(version: "v1", level: 3))
        }
        let loader = MapLoader(
            configuration: .init(
                server: dir.path("site").path, dataDirectory: dir.path("data"),
                trust: TrustPolicy(keys: [], allowUnsigned: true)))
        try await loader.install(["places"])
        try await RawThread.run {
            try Publisher.publish(release: dir.path("r2"), site: dir.path("site"), options: .init(version: "v2", level: 3))
        }
        let check = try await loader.checkForUpdate()
        let notes = check.plan.steps.flatMap { $0.patches.flatMap { $0.notes ?? [] } }
        #expect(
            notes.contains {
                $0.hasPrefix("places.geojson.gz: no see-through delta") && $0.contains("zlib does not reproduce")
                    && $0.contains("0% of its bytes seen through")
            },
            "\(notes)")
    }
}
