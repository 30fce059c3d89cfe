import Foundation
import MapTestSupport
import MapTransfer
import Synchronization
import Testing

@testable import MapLoader

/// A loader whose site is a source the test passes in (`MapLoader(configuration:source:)`):
/// faults chosen per file, with no server and no waiting, and a record of every file the
/// operation asked for.
@Suite struct InjectedSourceTests {
    /// A folder site (real file copies) that fails the files the test names, with the error
    /// it names: a fake of a network fault, which a folder cannot have.
    final class FakeFaultySource: SiteSource {
        let folder: FolderSource
        private let faults = Mutex<[String: MapLoaderError]>([:])
        private let asked = Mutex<[String]>([])

        init(_ root: URL) { folder = FolderSource(root: root) }

        var baseURL: URL { folder.baseURL }
        /// Every path asked for, in order.
        var requests: [String] { asked.withLock { $0 } }

        /// Makes every later request of `path` fail with `error`.
        func fail(_ path: String, with error: MapLoaderError) { faults.withLock { $0[path] = error } }

        func download(
            _ path: String, to file: URL, limit: TransferLimit, progress: @escaping @Sendable (Int64) -> Void
        ) async throws(MapLoaderError) {
            asked.withLock { $0.append(path) }
            if let fault = faults.withLock({ $0[path] }) { throw fault }
            try await folder.download(path, to: file, limit: limit, progress: progress)
        }
    }

    /// A loader of `site` through `source` alone: no server is configured, so a loader that
    /// ignored the source would fail with `noServer`.
    func loader(_ site: TestSite, _ source: FakeFaultySource) -> MapLoader {
        MapLoader(
            configuration: .init(server: nil, dataDirectory: site.dir.path("data"), trust: TrustPolicy(keys: [site.publicKey])),
            source: source)
    }

    @Test func aPatchThatFailsToDownloadFallsBackWithItsErrorRecorded() async throws {
        let site = try TestSite(revisions: [1], patchDepth: 1)
        let source = FakeFaultySource(site.site)
        let loader = loader(site, source)
        try await loader.install(["germany"])
        try site.publish(2, patchDepth: 1)
        let plan = try await loader.checkForUpdate().plan
        let berlinPlan = try #require(plan.steps.first { $0.name == "de-berlin/base" })
        #expect(berlinPlan.method == .delta && berlinPlan.patchFailure == nil)
        let patch = try #require(berlinPlan.patches.first)
        let reset = MapLoaderError.connectionFailed(url: "fake://mirror", reason: "connection reset by the fake source")
        source.fail(SiteLayout.blob(patch.sha256), with: reset)

        let report = try await loader.performUpdate()
        let berlin = try #require(report.steps.first { $0.name == "de-berlin/base" })
        #expect(berlin.method == .full)
        #expect(berlin.patchFailure == reset, "the report keeps the error, typed")
        #expect(berlin.reason.contains("connection reset by the fake source"))
        // Scripts see it too: `update --json` writes the error's message.
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(berlin)) as? [String: Any]
        #expect((json?["patchFailure"] as? String)?.contains("connection reset by the fake source") == true, "\(json ?? [:])")
        let hamburg = try #require(report.steps.first { $0.name == "de-hamburg/poi" })
        #expect(hamburg.method == .delta && hamburg.patchFailure == nil)
        #expect(try snapshot(loader.currentFolder.appendingPathComponent("de-berlin/base")) == snapshot(site.release(2, "de-berlin", "base")))
        #expect(try await loader.verify().ok)
        // Catalog, manifest and blobs of the update all went through the one source given.
        let asked = source.requests
        #expect(asked.contains(SiteLayout.catalog))
        #expect(asked.contains(SiteLayout.blob(patch.sha256)))
        #expect(asked.contains(SiteLayout.blob(try #require(berlinPlan.artifact).sha256)))
    }

    @Test func resumeFilesOfTheOldLayoutAreRemovedByTheNextChange() async throws {
        let site = try TestSite()
        let source = FakeFaultySource(site.site)
        let loader = loader(site, source)
        try await loader.install(["de-berlin"])
        // What an apply killed under the layout before downloads/resume/ left behind.
        let downloads = site.dir.path("data/downloads")
        let old = ["apply-0123456789abcdef01234567-89abcdef0123456789abcdef.partial", "apply-0123456789abcdef01234567-89abcdef0123456789abcdef.json"]
        for name in old { try Data(count: 4096).write(to: downloads.appendingPathComponent(name)) }
        try await loader.install(["de-hamburg"])
        #expect(FileSystem.names(in: downloads.path).filter { $0.hasPrefix("apply-") }.isEmpty)
    }
}
