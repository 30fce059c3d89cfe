import Foundation
import MapTestSupport
import MapTransfer
import Testing

@testable import MapLoader

/// Which mirror a loader asks, once one of them failed: two folder sites (the configured
/// one and a mirror), the configured one briefly away so that the mirror served once.
@Suite struct MirrorOrderTests {
    /// A site published at v1, copied to a configured folder and a mirror folder, a loader
    /// of both with de-berlin installed, and one check made while the configured folder was
    /// away (so the mirror is the one that last worked).
    static func afterAnOutage() async throws -> (TestSite, MapLoader, configured: URL, mirror: URL) {
        let site = try TestSite()
        let files = FileManager.default
        let (configured, mirror, away) = (site.dir.path("configured"), site.dir.path("mirror"), site.dir.path("away"))
        try files.copyItem(at: site.site, to: configured)
        try files.copyItem(at: site.site, to: mirror)
        let loader = MapLoader(
            configuration: .init(
                server: configured.path, dataDirectory: site.dir.path("data"),
                trust: TrustPolicy(keys: [site.publicKey]), mirrors: [mirror.path]))
        try await loader.install(["de-berlin"])
        try files.moveItem(at: configured, to: away)
        _ = try await loader.checkForUpdate()
        try files.moveItem(at: away, to: configured)
        return (site, loader, configured, mirror)
    }

    /// Replaces `folder` with the site as published now.
    static func refresh(_ folder: URL, from site: TestSite) throws {
        try FileManager.default.removeItem(at: folder)
        try FileManager.default.copyItem(at: site.site, to: folder)
    }

    @Test func aLaggingMirrorDoesNotHideTheConfiguredSitesNewVersion() async throws {
        let (site, loader, configured, _) = try await Self.afterAnOutage()
        try site.publish(2)
        try Self.refresh(configured, from: site)  // the mirror stays at v1
        let check = try await loader.checkForUpdate()
        #expect(check.currentVersion == "v2" && check.updateAvailable, "the configured site has v2")
    }

    @Test func aManifestThatFailsItsPinComesFromTheNextMirror() async throws {
        let (site, loader, configured, mirror) = try await Self.afterAnOutage()
        try site.publish(2)
        try Self.refresh(configured, from: site)
        try Self.refresh(mirror, from: site)
        // The catalog comes from the configured site, the manifest from the mirror that last
        // worked, whose copy is damaged: the configured site's copy is taken instead.
        let manifest = mirror.appendingPathComponent(SiteLayout.manifest("v2"))
        var bytes = try Data(contentsOf: manifest)
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: manifest)
        let check = try await loader.checkForUpdate()
        #expect(check.currentVersion == "v2" && check.updateAvailable)
        let report = try await loader.performUpdate()
        #expect(report.committed && report.toVersion == "v2")
        #expect(try await loader.verify().ok)
    }

    /// Each operation downloads through a copy of the site's source made for it (its pause
    /// control inside): the mirror that worked for one operation is the one the next asks
    /// first, whichever copy found it.
    @Test func theMirrorThatWorkedForOneOperationIsAskedFirstByTheNext() async throws {
        let site = try TestSite()
        let (away, mirror) = (site.dir.path("away"), site.dir.path("mirror"))
        try FileManager.default.copyItem(at: site.site, to: mirror)
        let source = MirroredSource([FolderSource(root: away), FolderSource(root: mirror)])
        let operation = source.controlled(by: TransferControl())
        try await operation.download(SiteLayout.catalog, to: site.dir.path("catalog.json"), limit: .atMost(1 << 20)) { _ in }
        #expect(operation.baseURL == mirror)
        #expect(source.baseURL == mirror, "the loader's source asks the mirror first too")
        #expect(source.controlled(by: TransferControl()).baseURL == mirror, "and so does the next operation's")
    }
}
