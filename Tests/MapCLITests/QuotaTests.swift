import Foundation
import MapTestSupport
import Testing

@testable import MapLoader

/// A quota on the data directory: refused up front, nothing changed, the error says what to do.
@Suite struct QuotaTests {
    @Test func aChangePastTheQuotaIsRefusedUpFront() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        try await loader.install(["de-berlin"])
        let installed = try Store(root: data).state().size(of: "de-berlin")
        let plan = try await loader.planInstall(["de-hamburg"])
        // A quota one byte short of the install's peak.
        let limited = MapLoader(
            configuration: .init(
                server: site.url, dataDirectory: data, trust: TrustPolicy(keys: [site.publicKey]),
                quota: installed + plan.peakBytes - 1))
        do {
            try await limited.install(["de-hamburg"])
            Issue.record("an install past the quota was carried out")
        } catch {
            guard case .quotaExceeded(let quota, let needed, let largest) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(quota == installed + plan.peakBytes - 1 && needed == installed + plan.peakBytes)
            #expect(largest.first?.hasPrefix("de-berlin ") == true)
            #expect(error.description.contains("uninstall one of the largest packages (de-berlin"))
        }
        #expect(try Store(root: data).state().packages.keys.sorted() == ["de-berlin"])
        // Exactly at the quota is allowed.
        let enough = MapLoader(
            configuration: .init(
                server: site.url, dataDirectory: data, trust: TrustPolicy(keys: [site.publicKey]),
                quota: installed + plan.peakBytes))
        try await enough.install(["de-hamburg"])
    }

    @Test func aSavedQuotaHoldsForEveryLoaderOfTheDirectory() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        try await site.loader(dataDirectory: data).setQuota(10_000)
        let other = site.loader(dataDirectory: data)
        #expect(try await other.quota() == 10_000)
        await #expect(throws: MapLoaderError.self) { try await other.install(["ch"]) }
        #expect(try Store(root: data).state().packages.isEmpty)
        try await other.setQuota(nil)
        try await other.install(["ch"])
        await #expect(throws: MapLoaderError.invalidParameters("a quota must be more than 0 bytes")) { try await other.setQuota(0) }
    }

    @Test func quotaThroughTheCLI() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        #expect(try await CLI.run(["config", "set", "quota", "50kB"], site: site, data: data).stdout == "quota 50.0 kB\n")
        #expect(try await CLI.run(["config", "get"], site: site, data: data).stdout == "quota 50.0 kB\n")
        let refused = try await CLI.run(["install", "europe"], site: site, data: data)
        #expect(refused.status == 8)
        #expect(refused.stderr.contains("over the data directory's quota of 50.0 kB"))
        #expect(try await CLI.run(["config", "set", "quota", "lots"], site: site, data: data).status == 64)
        #expect(try await CLI.run(["config", "unset", "quota"], site: site, data: data).stdout == "quota none\n")
        #expect(try await CLI.run(["install", "europe"], site: site, data: data).status == 0)
    }

    @Test func sizesParseAsPeopleWriteThem() {
        #expect(ByteFormat.parse("2GB") == 2_000_000_000)
        #expect(ByteFormat.parse("500 MB") == 500_000_000)
        #expect(ByteFormat.parse("1.5G") == 1_500_000_000)
        #expect(ByteFormat.parse("750k") == 750_000)
        #expect(ByteFormat.parse("1GiB") == 1 << 30)
        #expect(ByteFormat.parse("4096") == 4096)
        #expect(ByteFormat.parse("lots") == nil && ByteFormat.parse("-1GB") == nil && ByteFormat.parse("5 parsecs") == nil)
    }
}
