import Foundation
import MapTestSupport
import Testing

@testable import MapLoader

/// Manifest deltas, against a real server on 127.0.0.1: a device that kept the manifest
/// of an earlier version reads the new one as a zstd delta from it, checked against the
/// JSON pin the signed catalog carries; a delta that is missing or damaged falls back to
/// the packed manifest, and a manifest that does not unpack to its pin is refused.
@Suite struct ManifestDeltaTests {
    static func sent(_ site: TestSite, since before: [String: Int64]) -> [String: Int64] {
        TimestampTests.sent(site, since: before)
    }

    @Test func anUpdateReadsTheManifestAsADeltaFromTheOneKept() async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["de-berlin"])
        try site.publish(2)
        let catalog = try JSONCoding.decode(Catalog.self, from: Data(contentsOf: site.site.appendingPathComponent(SiteLayout.catalog)))
        let v1 = try #require(catalog.entry("v1")?.unpacked)
        let v2 = try #require(catalog.entry("v2")?.unpacked)
        let deltaPath = SiteLayout.manifestDelta(to: v2.sha256, from: v1.sha256)
        let before = site.server.statistics.bodyBytesSentByPath
        let update = try await loader.performUpdate()
        #expect(update.toVersion == "v2")
        let sent = Self.sent(site, since: before)
        #expect(sent["/versions/v2/manifest.json.zst"] == nil, "\(sent)")
        let delta = try #require(sent["/" + deltaPath], "\(sent)")
        #expect(delta < catalog.entry("v2")!.size, "\(sent)")
        // The cache keeps the JSON under its pin, so the device lists its maps offline.
        let cached = loader.configuration.dataDirectory.appendingPathComponent("cache/manifests/\(v2.sha256)")
        #expect(FileHashing.sha256(of: try Data(contentsOf: cached)) == v2.sha256)
        #expect(try await loader.verify().ok)
    }

    @Test func aDamagedOrMissingManifestDeltaFallsBackToThePackedManifest() async throws {
        let site = try TestSite()
        let loader = site.loader()
        let other = site.loader()
        try await loader.install(["de-berlin"])
        try await other.install(["de-berlin"])
        try site.publish(2)
        let deltas = site.site.appendingPathComponent(SiteLayout.deltas)
        let names = try FileManager.default.contentsOfDirectory(atPath: deltas.path).filter { $0.hasPrefix("manifest-") }
        #expect(names.count == 1)
        let file = deltas.appendingPathComponent(names[0])
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: file)
        var before = site.server.statistics.bodyBytesSentByPath
        #expect(try await loader.checkForUpdate().updateAvailable)
        #expect(Self.sent(site, since: before)["/versions/v2/manifest.json.zst"] != nil)

        try FileManager.default.removeItem(at: file)
        before = site.server.statistics.bodyBytesSentByPath
        #expect(try await other.performUpdate().toVersion == "v2")
        #expect(Self.sent(site, since: before)["/versions/v2/manifest.json.zst"] != nil)
        #expect(try await other.verify().ok)
    }

    /// A catalog signed with a JSON pin its manifest does not unpack to (a publisher bug, or
    /// a stolen key): refused with the reason, and nothing changes.
    @Test func aManifestThatDoesNotUnpackToItsPinIsRefused() async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["de-berlin"])
        let before = try snapshot(loader.currentFolder)
        try site.publish(2)
        let url = site.site.appendingPathComponent(SiteLayout.catalog)
        var catalog = try JSONCoding.decode(Catalog.self, from: Data(contentsOf: url))
        let index = try #require(catalog.versions.firstIndex { $0.version == "v2" })
        /// Signs v2's entry changed by `edit` into the catalog and expects the update refused
        /// with metadata whose detail holds `words` (and naming `file`), the maps unchanged.
        func expectRefused(_ words: String, file: String = "", _ edit: (inout Catalog.Entry) -> Void) async throws {
            edit(&catalog.versions[index])
            catalog.serial += 1
            try site.writeSigned(try catalog.jsonData())
            await #expect {
                try await loader.performUpdate()
            } throws: { error in
                guard case MapLoaderError.invalidMetadata(let what, let detail) = error else { return false }
                return detail.contains(words) && (file.isEmpty || what.contains(file))
            }
            #expect(try snapshot(loader.currentFolder) == before)
        }
        try await expectRefused("does not unpack to the JSON the catalog pins", file: "manifest.json.zst") {
            $0.unpacked?.sha256 = String(repeating: "0", count: 64)
        }
        // A pin that is not a hash, or a size past the limit, is refused with the catalog.
        try await expectRefused("malformed hash") { $0.unpacked = FilePin(sha256: "../../" + String(repeating: "a", count: 58), size: 10) }
        try await expectRefused("malformed hash") { $0.unpacked = FilePin(sha256: String(repeating: "a", count: 64), size: 1 << 40) }
        // A manifest path outside the site (export writes it under the stick) is refused too.
        try await expectRefused("not a plain path inside the site") {
            $0.unpacked = nil
            $0.manifest = "../../outside/manifest.json.zst"
        }
    }
}
