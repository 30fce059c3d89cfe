import Foundation
import ManifestServer
import Testing
@testable import MapLoader
import MapPublisher

/// The attacks of TUF's and Uptane's threat models that apply to MapLoader, each run
/// against the real `maploader` and a real HTTP server on 127.0.0.1 that plays the
/// attacker. Every case asserts the exit code, the one-line message, and that the
/// installed maps are exactly as they were.
@Suite struct AttackTests {
    /// A device with de-berlin v1 installed from `site`, and v2 published since (so an
    /// update fetches a new catalog, manifest and patch blobs).
    struct Device {
        let site: TestSite
        let data: URL
        let before: [String: String]

        init() async throws {
            site = try TestSite()
            data = site.dir.path("device")
            let installed = try await CLI.run(["install", "de-berlin"], site: site, data: data)
            #expect(installed.status == 0, "\(installed.stderr)")
            before = try snapshot(data.appendingPathComponent("current"))
            try site.publish(2)
        }

        /// Runs a client command against `server` (the attacker), measuring peak memory;
        /// on the device, or on a new device (`fresh`) that reads the newest version.
        func run(_ arguments: [String], against server: ManifestServer,
                 fresh: Bool = false) async throws -> (result: CLI.Result, peakBytes: Int64) {
            let port = try server.start()
            defer { server.stop() }
            let folder = fresh ? site.dir.path("fresh-\(UUID().uuidString)") : data
            return try await CLI.runMeasuringMemory(arguments + [
                "--server", "http://127.0.0.1:\(port)", "--data-dir", folder.path, "--trust-key", site.publicKey.base64,
            ])
        }

        /// The installed maps are as they were before the attack.
        func expectUnchanged() throws {
            #expect(try snapshot(data.appendingPathComponent("current")) == before)
        }
    }

    static let framings: [EndlessBody.Framing] = [.unannounced, .chunked, .announced(1 << 40)]

    /// Endless data: a catalog, a manifest or a blob whose body never ends, announced or
    /// not, chunked or not. The client takes no more than the pinned (or, for the
    /// catalog, the capped) length, stays under 100 MB and exits 6 with one line.
    @Test(arguments: ["/catalog.json", "/manifest.json.zst", "/blobs/"], framings)
    func endlessDataIsCutAtTheLimit(path: String, framing: EndlessBody.Framing) async throws {
        let device = try await Device()
        let attacker = ManifestServer(root: device.site.site, faults: FaultPlan(endless: EndlessBody(framing, paths: [path])))
        // An update reads the new manifest; an install of another package fetches two blobs
        // at once (the case that once piled up memory).
        let command = path.contains("manifest") ? ["update"] : ["install", "de-hamburg"]
        let (result, peak) = try await device.run(command, against: attacker)
        #expect(result.status == 6, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("error:") }
        #expect(lines.count == 1, "\(result.stderr)")
        let line = lines.first ?? ""
        #expect(line.contains(path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))), "\(line)")
        #expect(line.contains("longer than") || line.contains("announces"), "\(line)")
        #expect(peak > 0 && peak < 100_000_000, "peak RSS \(peak) bytes")
        try device.expectUnchanged()
        #expect(attacker.statistics.bodyBytesSent < 1 << 30)
    }

    /// Rewrites the manifest of `version` (and the catalog that pins it) with `edit`, and
    /// signs the catalog with the publisher's own key: a compromised or buggy publisher.
    static func publishSigned(_ site: TestSite, version: String, manifest edit: (inout Manifest) -> Void = { _ in },
                              catalog editCatalog: (inout Catalog) -> Void = { _ in }) throws {
        var manifest = try site.manifest(version)
        edit(&manifest)
        let bytes = try manifest.encoded()
        try bytes.write(to: site.site.appendingPathComponent(SiteLayout.manifest(version)))
        let catalogURL = site.site.appendingPathComponent(SiteLayout.catalog)
        var catalog = try JSONCoding.decode(Catalog.self, from: Data(contentsOf: catalogURL))
        let index = try #require(catalog.versions.firstIndex { $0.version == version })
        catalog.versions[index].sha256 = FileHashing.sha256(of: bytes)
        catalog.versions[index].size = Int64(bytes.count)
        editCatalog(&catalog)
        let data = try JSONCoding.encoder().encode(catalog)
        try data.write(to: catalogURL)
        try SigningKeyFile.sign(data, keyFile: site.dir.path("publisher.key")).jsonData()
            .write(to: site.site.appendingPathComponent(SiteLayout.catalogSignature))
    }

    /// Sets `change` on de-hamburg's artifacts in `manifest`.
    static func editHamburg(_ manifest: inout Manifest, _ change: (inout Artifact) -> Void) {
        func visit(_ node: inout PackageNode) {
            if node.id == "de-hamburg" {
                for group in (node.artifacts ?? [:]).keys { change(&node.artifacts![group]!) }
            }
            for index in (node.children ?? []).indices { visit(&node.children![index]) }
        }
        visit(&manifest.root)
    }

    /// A number a compromised publisher signs into a manifest.
    enum ArtifactNumber: String, CaseIterable, Sendable {
        case unpackedSizeNear9e18, filesNear2to62, sizeOf5e18, negativeSize, patchOfMaxSize

        /// The field the refusal names.
        var field: String {
            switch self {
            case .unpackedSizeNear9e18: "unpackedSize"
            case .filesNear2to62: "files"
            case .sizeOf5e18, .negativeSize: "size"
            case .patchOfMaxSize: "patch"
            }
        }

        func apply(_ artifact: inout Artifact) {
            switch self {
            case .unpackedSizeNear9e18: artifact.unpackedSize = 9_000_000_000_000_000_000
            case .filesNear2to62: artifact.files = 1 << 62
            case .sizeOf5e18: artifact.size = 5_000_000_000_000_000_000
            case .negativeSize: artifact.size = -1
            case .patchOfMaxSize:
                artifact.patches = [PatchEdge(from: "v0", to: "v1", sha256: artifact.sha256, size: .max,
                                              fromTreeHash: artifact.treeHash, toTreeHash: artifact.treeHash)]
            }
        }
    }

    /// Every numeric field at its limits: a signed manifest whose sizes or counts are huge
    /// or negative (two groups of 5e18 once overflowed the plan's total) is refused with
    /// exit 6 and one line naming the field, by every command that reads it (the
    /// planner's sums once trapped, killing the process).
    @Test(arguments: ArtifactNumber.allCases)
    func signedNumbersOutOfRangeAreRefused(_ number: ArtifactNumber) async throws {
        let device = try await Device()
        try Self.publishSigned(device.site, version: "v2", manifest: { Self.editHamburg(&$0, number.apply) })
        // A new device reads v2 for everything; the device with v1 installed reads it to update.
        let commands = [["list"], ["info", "de-hamburg"], ["install", "--dry-run", "de-hamburg"], ["install", "de-hamburg"]]
        for command in commands + [["update"]] {
            let (result, _) = try await device.run(command, against: ManifestServer(root: device.site.site),
                                                   fresh: command != ["update"])
            #expect(result.status == 6, "\(command): \(result.stderr)")
            let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("error:") }
            #expect(lines.count == 1 && lines[0].contains(number.field) && lines[0].contains("de-hamburg"),
                    "\(command): \(result.stderr)")
        }
        try device.expectUnchanged()
    }

    /// A signed catalog that pins a manifest of absurd size, or carries a serial near
    /// `Int.max`, is refused before anything is fetched or counted on.
    @Test(arguments: ["manifest size", "serial"])
    func signedCatalogNumbersOutOfRangeAreRefused(field: String) async throws {
        let device = try await Device()
        try Self.publishSigned(device.site, version: "v2", catalog: { catalog in
            if field == "serial" { catalog.serial = .max } else { catalog.versions[catalog.versions.count - 1].size = 1 << 62 }
        })
        let (result, _) = try await device.run(["update"], against: ManifestServer(root: device.site.site))
        #expect(result.status == 6, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("error:") }
        let word = field == "serial" ? "serial" : "bytes"
        #expect(lines.count == 1 && lines[0].contains(word) && lines[0].contains("catalog.json"), "\(result.stderr)")
        try device.expectUnchanged()
    }
}
