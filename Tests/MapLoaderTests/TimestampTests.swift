import Foundation
import MapTestSupport
import Testing

@testable import MapLoader

/// The site's signed timestamp (`timestamp.json`) and catalog deltas, against a real
/// server on 127.0.0.1: a poll reads the timestamp alone, an update reads the catalog as a
/// delta from the one kept, and every shortcut falls back to what a site without them
/// does when its file is missing, lagging or damaged.
@Suite struct TimestampTests {
    /// Body bytes the server sent per path since `before`.
    static func sent(_ site: TestSite, since before: [String: Int64]) -> [String: Int64] {
        site.server.statistics.bodyBytesSentByPath.filter { $0.value > (before[$0.key] ?? 0) }
            .reduce(into: [:]) { out, item in out[item.key] = item.value - (before[item.key] ?? 0) }
    }

    @Test func aPollReadsTheTimestampAloneAndAnUpdateReadsACatalogDelta() async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["de-berlin"])
        try site.publish(2)
        var before = site.server.statistics.bodyBytesSentByPath
        #expect(try await loader.checkForUpdate().updateAvailable)
        let check = Self.sent(site, since: before)
        // The catalog comes as a delta from the one kept at v1: no catalog.json, no signature.
        #expect(
            Set(check.keys.map { $0.hasPrefix("/deltas/catalog-") ? "delta" : $0.hasPrefix("/deltas/manifest-") ? "manifest delta" : $0 })
                == ["/timestamp.json", "delta", "manifest delta"], "\(check)")
        #expect(check.first { $0.key.hasPrefix("/deltas/catalog-") }!.value < 400, "\(check)")
        try await loader.performUpdate()
        before = site.server.statistics.bodyBytesSentByPath
        #expect(try await loader.checkForUpdate().updateAvailable == false)
        let poll = Self.sent(site, since: before)
        #expect(Array(poll.keys) == ["/timestamp.json"], "\(poll)")
        #expect(poll.values.reduce(0, +) < 400, "\(poll)")
    }

    /// The timestamp only saves bytes: a tampered one is passed over and the catalog's
    /// signature decides, so a tampered catalog beside it is still refused.
    @Test func aTamperedTimestampIsPassedOverAndTheSignatureDecides() async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["de-berlin"])
        let before = try snapshot(loader.currentFolder)
        try site.publish(2)
        let url = site.site.appendingPathComponent(SiteLayout.timestamp)
        let text = try String(contentsOf: url, encoding: .utf8)
        try text.replacingOccurrences(of: "\"serial\":2", with: "\"serial\":3").write(to: url, atomically: true, encoding: .utf8)
        let catalogURL = site.site.appendingPathComponent(SiteLayout.catalog)
        let catalog = try Data(contentsOf: catalogURL)
        try (catalog + Data(" ".utf8)).write(to: catalogURL)
        await #expect {
            try await loader.performUpdate()
        } throws: { error in
            guard case MapLoaderError.signatureRefused(let detail) = error else { return false }
            return detail.contains("catalog.json") && detail.contains("not signed by a trusted key")
        }
        #expect(try snapshot(loader.currentFolder) == before)
        // With the catalog as published, its signature carries the update.
        try catalog.write(to: catalogURL)
        let sent = site.server.statistics.bodyBytesSentByPath
        try await loader.performUpdate()
        #expect(try await loader.checkForUpdate().installedVersion == "v2")
        #expect(Self.sent(site, since: sent)["/catalog.json.sig"] != nil)
    }

    /// A catalog forged with another key, with a timestamp by that key pinning it: neither
    /// vouches for it, and nothing changes.
    @Test func aTimestampByAnotherKeyDoesNotVouchForItsCatalog() async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["de-berlin"])
        let before = try snapshot(loader.currentFolder)
        try site.publish(2)
        let stranger = site.dir.path("stranger.key")
        _ = try SigningKeyFile.generate(at: stranger)
        var forged = try JSONCoding.decode(Catalog.self, from: Data(contentsOf: site.site.appendingPathComponent(SiteLayout.catalog)))
        forged.serial += 1
        try site.writeSigned(try forged.jsonData(), keyFile: stranger)
        await #expect {
            try await loader.performUpdate()
        } throws: { error in
            guard case MapLoaderError.signatureRefused = error else { return false }
            return true
        }
        #expect(try snapshot(loader.currentFolder) == before)
    }

    /// A timestamp that lags behind the catalog (an upload between the two, or a stale
    /// cache): the catalog's own signature decides, so a new device still installs v2.
    @Test func aLaggingTimestampFallsBackToTheCatalogSignature() async throws {
        let site = try TestSite()
        let url = site.site.appendingPathComponent(SiteLayout.timestamp)
        let first = try Data(contentsOf: url)
        try site.publish(2)
        try first.write(to: url)
        let loader = site.loader()
        let before = site.server.statistics.bodyBytesSentByPath
        try await loader.install(["de-berlin"])
        #expect(try await loader.checkForUpdate().installedVersion == "v2")
        #expect(Self.sent(site, since: before)["/catalog.json.sig"] != nil)
    }

    /// A damaged delta does not give the pinned bytes: the whole catalog is read instead.
    @Test func aDamagedCatalogDeltaFallsBackToTheWholeCatalog() async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["de-berlin"])
        try site.publish(2)
        let deltas = site.site.appendingPathComponent(SiteLayout.deltas)
        for name in try FileManager.default.contentsOfDirectory(atPath: deltas.path) {
            var bytes = try Data(contentsOf: deltas.appendingPathComponent(name))
            bytes[bytes.count / 2] ^= 0xFF
            try bytes.write(to: deltas.appendingPathComponent(name))
        }
        let before = site.server.statistics.bodyBytesSentByPath
        try await loader.performUpdate()
        #expect(try await loader.checkForUpdate().installedVersion == "v2")
        let sent = Self.sent(site, since: before)
        #expect(sent["/catalog.json"] != nil && sent["/catalog.json.sig"] == nil, "\(sent)")
    }
}
