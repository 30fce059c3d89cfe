import Foundation
import Testing
@testable import MapLoader

/// A site on a USB stick or inside an app bundle: `--server` names a folder (or a
/// `file://` URL) and installs and updates work exactly as over HTTP, with the same
/// signature and hash checks.
@Suite struct SideloadTests {
    @Test(arguments: ["folder", "file URL"])
    func aFolderSiteInstallsAndUpdatesLikeHTTP(form: String) async throws {
        let site = try TestSite()
        let server = form == "folder" ? site.site.path : site.site.absoluteURL.absoluteString
        #expect(server.hasPrefix(form == "folder" ? "/" : "file:///"))
        let data = site.dir.path("data")
        let loader = MapLoader(configuration: .init(server: server, dataDirectory: data, trust: TrustPolicy(keys: [site.publicKey])))
        try await loader.install(["de-berlin"])
        let viaHTTP = site.loader()
        try await viaHTTP.install(["de-berlin"])
        #expect(try snapshot(data.appendingPathComponent("current/de-berlin")) ==
                snapshot(URL(fileURLWithPath: viaHTTP.configuration.dataDirectory.path).appendingPathComponent("current/de-berlin")))

        try site.publish(2)
        let report = try await loader.performUpdate()
        #expect(report.toVersion == "v2")
        #expect(report.steps.contains { $0.method == .delta && $0.package == "de-berlin" })
        #expect(try await loader.verify().ok)
    }

    @Test func aTamperedFolderSiteIsRefusedAndChangesNothing() async throws {
        let site = try TestSite()
        let stick = site.dir.path("usb")
        try FileManager.default.copyItem(at: site.site, to: stick)
        let data = site.dir.path("data")
        let loader = MapLoader(configuration: .init(server: stick.path, dataDirectory: data, trust: TrustPolicy(keys: [site.publicKey])))
        // One byte of one archive changed on the stick: the pinned hash refuses it.
        let manifest = try site.manifest("v1")
        let blob = try #require(manifest.root.allNodes.first { $0.id == "de-berlin" }?.artifacts?["base"]?.sha256)
        let file = stick.appendingPathComponent(SiteLayout.blob(blob))
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: file)
        await #expect(throws: MapLoaderError.self) { try await loader.install(["de-berlin"]) }
        #expect(try Store(root: data).state().packages.isEmpty)
        // A catalog edited on the stick no longer matches its signature.
        let catalog = stick.appendingPathComponent("catalog.json")
        let text = try String(contentsOf: catalog, encoding: .utf8).replacingOccurrences(of: "\"v1\"", with: "\"v1 \"")
        try text.write(to: catalog, atomically: true, encoding: .utf8)
        do {
            try await loader.install(["ch"])
            Issue.record("a tampered catalog was accepted")
        } catch {
            guard case .signatureRefused = error else { Issue.record("expected signatureRefused, got \(error)"); return }
        }
        #expect(try Store(root: data).state().packages.isEmpty)
    }

    @Test func mapsFromAStickLaterUpdateFromTheServer() async throws {
        let site = try TestSite()
        let stick = site.dir.path("usb")
        try FileManager.default.copyItem(at: site.site, to: stick)
        let data = site.dir.path("data")
        let offline = MapLoader(configuration: .init(server: stick.path, dataDirectory: data, trust: TrustPolicy(keys: [site.publicKey])))
        try await offline.install(["de-berlin"])
        try site.publish(2)
        // Back online: the same data directory, now pointed at the HTTP server.
        let online = site.loader(dataDirectory: data)
        let report = try await online.performUpdate()
        #expect(report.fromVersion == "v1" && report.toVersion == "v2")
        #expect(report.steps.contains { $0.method == .delta })
        #expect(try await online.verify().ok)
    }
}
