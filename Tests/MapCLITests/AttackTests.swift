import Foundation
import ManifestServer
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

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
        /// The catalog, signature and timestamp the device accepted at v1, as an attacker keeps them.
        let oldCatalog: (catalog: Data, signature: Data, timestamp: Data)

        init() async throws {
            site = try TestSite()
            data = site.dir.path("device")
            let installed = try await CLI.run(["install", "de-berlin"], site: site, data: data)
            #expect(installed.status == 0, "\(installed.stderr)")
            before = try snapshot(data.appendingPathComponent("current"))
            oldCatalog = (
                try Data(contentsOf: site.site.appendingPathComponent(SiteLayout.catalog)),
                try Data(contentsOf: site.site.appendingPathComponent(SiteLayout.catalogSignature)),
                try Data(contentsOf: site.site.appendingPathComponent(SiteLayout.timestamp))
            )
            try site.publish(2)
        }

        /// Runs `command` against the site (or `server`) and expects it refused: `status`,
        /// one error line holding every one of `words`, the installed maps unchanged.
        func expectRefused(
            _ command: [String], status: Int32, _ words: [String],
            against server: ManifestServer? = nil, fresh: Bool = false
        ) async throws {
            let (result, _) = try await run(command, against: server ?? ManifestServer(root: site.site), fresh: fresh)
            #expect(result.status == status, "\(result.stderr)")
            let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("error:") }
            #expect(lines.count == 1 && words.allSatisfy { lines[0].contains($0) }, "\(result.stderr)")
            try expectUnchanged()
        }

        /// The blob files de-berlin's groups need to reach `version`: archives and patches.
        func berlinBlobs(_ version: String = "v2") throws -> [URL] {
            let leaf = try #require(try site.manifest(version).root.leaves.first { $0.id == "de-berlin" })
            let hashes = (leaf.artifacts ?? [:]).values.flatMap { [$0.sha256] + ($0.patches ?? []).map(\.sha256) }
            return hashes.map { site.site.appendingPathComponent(SiteLayout.blob($0)) }
        }

        /// Runs a client command against `server` (the attacker), measuring peak memory;
        /// on the device, or on a new device (`fresh`) that reads the newest version.
        func run(
            _ arguments: [String], against server: ManifestServer,
            fresh: Bool = false
        ) async throws -> (result: CLI.Result, peakBytes: Int64) {
            let port = try server.start()
            defer { server.stop() }
            let folder = fresh ? site.dir.path("fresh-\(UUID().uuidString)") : data
            return try await CLI.runMeasuringMemory(
                arguments + [
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
    /// catalog and timestamp, the capped) length, stays under 100 MB and exits 6 with one
    /// line. The catalog is read whole by a new device (a device that kept the previous
    /// one reads a delta); the signature file by a device of a site without a timestamp.
    /// An endless timestamp is cut at its cap and passed over (it only saves bytes): the
    /// new device installs through the catalog's signature. Endless catalog and manifest
    /// deltas are cut at the length of the file they stand for and passed over too: the
    /// device reads the catalog and manifest whole. A manifest is read by an update whose
    /// site withholds the manifest delta.
    @Test(arguments: ["/catalog.json", "/catalog.json.sig", "/timestamp.json", "/deltas/", "/manifest.json.zst", "/blobs/"], framings)
    func endlessDataIsCutAtTheLimit(path: String, framing: EndlessBody.Framing) async throws {
        let device = try await Device()
        let attacker = ManifestServer(root: device.site.site, faults: FaultPlan(endless: EndlessBody(framing, paths: [path])))
        // An update reads the new manifest; an install of another package fetches two blobs
        // at once (the case that once piled up memory).
        let command = path.contains("manifest") || path == "/deltas/" ? ["update"] : ["install", "de-hamburg"]
        if path.hasSuffix(".sig") { try device.site.removeTimestamp() }
        if path.contains("manifest") { try device.site.removeManifestDeltas() }
        let (result, peak) = try await device.run(command, against: attacker, fresh: path == "/catalog.json" || path == "/timestamp.json")
        if path == "/timestamp.json" || path == "/deltas/" {
            #expect(result.status == 0, "\(result.stderr)")
            #expect(peak > 0 && peak < 100_000_000, "peak RSS \(peak) bytes")
            #expect(attacker.statistics.bodyBytesSent < 64 << 20, "the client stops reading at the cap; the rest is socket buffers")
            return
        }
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
    static func publishSigned(
        _ site: TestSite, version: String, manifest edit: (inout Manifest) -> Void = { _ in },
        catalog editCatalog: (inout Catalog) -> Void = { _ in }
    ) throws {
        var manifest = try site.manifest(version)
        edit(&manifest)
        let bytes = try manifest.encoded()
        let json = try manifest.jsonData(pretty: false)
        try bytes.write(to: site.site.appendingPathComponent(SiteLayout.manifest(version)))
        let catalogURL = site.site.appendingPathComponent(SiteLayout.catalog)
        var catalog = try JSONCoding.decode(Catalog.self, from: Data(contentsOf: catalogURL))
        let index = try #require(catalog.versions.firstIndex { $0.version == version })
        catalog.versions[index].sha256 = FileHashing.sha256(of: bytes)
        catalog.versions[index].size = Int64(bytes.count)
        catalog.versions[index].unpacked = FilePin(sha256: FileHashing.sha256(of: json), size: Int64(json.count))
        editCatalog(&catalog)
        try site.writeSigned(try JSONCoding.encoder().encode(catalog))
    }

    /// Sets `change` on de-hamburg's artifacts in `manifest`.
    static func editHamburg(_ manifest: inout Manifest, _ change: (inout Artifact) -> Void) {
        editLeaf("de-hamburg", in: &manifest) { _, artifact in change(&artifact) }
    }

    /// Calls `change` with each group name and artifact of leaf `id` in `manifest`.
    static func editLeaf(_ id: String, in manifest: inout Manifest, _ change: (String, inout Artifact) -> Void) {
        func visit(_ node: inout PackageNode) {
            if node.id == id {
                for group in (node.artifacts ?? [:]).keys { change(group, &node.artifacts![group]!) }
            }
            for index in (node.children ?? []).indices { visit(&node.children![index]) }
        }
        visit(&manifest.root)
    }

    /// Endless data on the remaining paths: root files (a site with roots) and the parts of
    /// a split manifest (content-addressed under `blobs/`, fetched before any archive).
    @Test(arguments: ["roots", "parts"])
    func endlessRootsAndPartsAreCut(_ what: String) async throws {
        let device = try await Device()
        let site = device.site
        if what == "roots" {
            var changes = RootChanges()
            changes.rootKeys = [site.publicKey]
            changes.addCatalogKeys = [site.publicKey]
            let draft = try SiteRoots.draft(site: site.site, changes: changes)
            try SiteRoots.publish(draft, signatures: [try SiteRoots.sign(draft, keyFile: site.dir.path("publisher.key"))], site: site.site)
            try Publisher.resign(site: site.site, keyFile: site.dir.path("publisher.key"), validity: 3600)
        } else {
            try ReleaseBuilder.make(at: site.dir.path("r3"), revision: 3)
            var options = PublishOptions(version: "v3", level: 3, validity: 3600, keyFile: site.dir.path("publisher.key"))
            options.manifestPartLeaves = 1
            try Publisher.publish(release: site.dir.path("r3"), site: site.site, options: options)
        }
        let path = what == "roots" ? "/root/" : "/blobs/"
        let attacker = ManifestServer(root: site.site, faults: FaultPlan(endless: EndlessBody(.unannounced, paths: [path])))
        let (result, peak) = try await device.run(["update"], against: attacker)
        // A root file past its limit is a refused root, as every root refusal is (exit 7,
        // issue "Hostile signed payloads", case 12); a part past its pin is corrupt data.
        #expect(result.status == (what == "roots" ? 7 : 6), "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("error:") }
        #expect(lines.count == 1 && lines[0].contains(path.dropFirst()) && lines[0].contains("longer than"), "\(result.stderr)")
        #expect(peak > 0 && peak < 100_000_000, "peak RSS \(peak) bytes")
        try device.expectUnchanged()
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
                artifact.patches = [
                    PatchEdge(
                        from: "v0", to: "v1", sha256: artifact.sha256, size: .max,
                        fromTreeHash: artifact.treeHash, toTreeHash: artifact.treeHash)
                ]
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
            let (result, _) = try await device.run(
                command, against: ManifestServer(root: device.site.site),
                fresh: command != ["update"])
            #expect(result.status == 6, "\(command): \(result.stderr)")
            let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("error:") }
            #expect(
                lines.count == 1 && lines[0].contains(number.field) && lines[0].contains("de-hamburg"),
                "\(command): \(result.stderr)")
        }
        try device.expectUnchanged()
    }

    /// A signed catalog that pins a manifest of absurd size, or carries a serial near
    /// `Int.max`, is refused before anything is fetched or counted on.
    @Test(arguments: ["manifest size", "serial"])
    func signedCatalogNumbersOutOfRangeAreRefused(field: String) async throws {
        let device = try await Device()
        try Self.publishSigned(
            device.site, version: "v2",
            catalog: { catalog in
                if field == "serial" { catalog.serial = .max } else { catalog.versions[catalog.versions.count - 1].size = 1 << 62 }
            })
        let (result, _) = try await device.run(["update"], against: ManifestServer(root: device.site.site))
        #expect(result.status == 6, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("error:") }
        let word = field == "serial" ? "serial" : "bytes"
        #expect(lines.count == 1 && lines[0].contains(word) && lines[0].contains("catalog.json"), "\(result.stderr)")
        try device.expectUnchanged()
    }

    /// Arbitrary installation: every blob de-berlin needs is replaced by other bytes of the
    /// same length. The pinned SHA-256 refuses each (exit 6) and nothing is installed.
    @Test func arbitraryInstallationIsRefused() async throws {
        let device = try await Device()
        for blob in try device.berlinBlobs() {
            let size = try Data(contentsOf: blob).count
            try Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: blob)
        }
        try await device.expectRefused(["update"], status: 6, ["SHA-256", "pins"])
    }

    /// Wrong software: a real archive of another package is served for de-berlin's blobs.
    @Test func wrongSoftwareIsRefused() async throws {
        let device = try await Device()
        let other = try Data(contentsOf: device.site.blob("de-hamburg", "base", version: "v2"))
        for blob in try device.berlinBlobs() { try other.write(to: blob) }
        try await device.expectRefused(["update"], status: 6, ["integrity check failed"])
    }

    /// Mix and match: the new catalog is served with the old version's manifest in place
    /// of the new one. The catalog pins each manifest's hash, so it is refused.
    @Test func mixAndMatchIsRefused() async throws {
        let device = try await Device()
        let v1 = try Data(contentsOf: device.site.site.appendingPathComponent(SiteLayout.manifest("v1")))
        try v1.write(to: device.site.site.appendingPathComponent(SiteLayout.manifest("v2")))
        // The attacker withholds the manifest delta, so the device reads the manifest file.
        try device.site.removeManifestDeltas()
        try await device.expectRefused(["update"], status: 6, ["manifest.json.zst"])
    }

    /// Extraneous packages: a package added to the manifest without the publisher's key
    /// (the catalog's pin no longer matches) is refused, and installs nothing.
    @Test func extraneousPackagesAreRefused() async throws {
        let device = try await Device()
        var manifest = try device.site.manifest("v2")
        let artifacts = manifest.root.leaves[0].artifacts
        manifest.root.children?.append(PackageNode(id: "implant", title: "Implant", artifacts: artifacts))
        try manifest.encoded().write(to: device.site.site.appendingPathComponent(SiteLayout.manifest("v2")))
        try await device.expectRefused(["install", "implant"], status: 6, ["manifest.json.zst", "pins"], fresh: true)
    }

    /// Rollback: after the device accepted v2, the server replays the catalog of v1 (still
    /// validly signed): refused (exit 7) as older than what was accepted.
    @Test func rollbackOfTheCatalogIsRefused() async throws {
        let device = try await Device()
        let (checked, _) = try await device.run(["check-update"], against: ManifestServer(root: device.site.site))
        #expect(checked.status == 3, "\(checked.stderr)")
        try device.oldCatalog.signature.write(to: device.site.site.appendingPathComponent(SiteLayout.catalogSignature))
        try device.oldCatalog.catalog.write(to: device.site.site.appendingPathComponent(SiteLayout.catalog))
        try device.oldCatalog.timestamp.write(to: device.site.site.appendingPathComponent(SiteLayout.timestamp))
        try await device.expectRefused(["update"], status: 7, ["older than serial"])
    }

    /// Indefinite freeze: the server keeps serving a catalog past its expiry, so devices
    /// never hear of updates. Refused (exit 7) once expired.
    @Test func indefiniteFreezeIsRefused() async throws {
        let device = try await Device()
        try Publisher.resign(site: device.site.site, keyFile: device.site.dir.path("publisher.key"), validity: -60)
        try await device.expectRefused(["update"], status: 7, ["expired"])
    }

    /// Malicious mirror: one of two mirrors corrupts every blob; the device fetches the
    /// bytes again from the other mirror and installs what the publisher signed.
    @Test func aMaliciousMirrorIsBypassed() async throws {
        let device = try await Device()
        let bad = ManifestServer(root: device.site.site, faults: FaultPlan(corruptOffset: 1_000))
        let good = ManifestServer(root: device.site.site)
        let badPort = try bad.start()
        let goodPort = try good.start()
        defer {
            bad.stop()
            good.stop()
        }
        let result = try await CLI.run([
            "install", "de-hamburg", "--server", "http://127.0.0.1:\(badPort)", "--server",
            "http://127.0.0.1:\(goodPort)", "--data-dir", device.data.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try snapshot(device.data.appendingPathComponent("current/de-hamburg/base")) == snapshot(device.site.release(1, "de-hamburg", "base")))
    }

    /// Fast-forward: a leaked online key signs a catalog with a serial far ahead, which the
    /// device accepts (the key was valid). The publisher revokes that key in a new root and
    /// publishes with a new key at an ordinary serial: the device recovers at its next
    /// check, because a revocation forgets the serial accepted before (as TUF does).
    @Test func fastForwardIsRecoveredByRotation() async throws {
        let device = try await Device()
        let key = { (name: String) in device.site.dir.path(name) }
        let rootKey = try SigningKeyFile.generate(at: key("root.key"))
        let online2 = try SigningKeyFile.generate(at: key("online-2.key"))
        var first = RootChanges()
        first.rootKeys = [rootKey]
        first.addCatalogKeys = [device.site.publicKey]
        let draft = try SiteRoots.draft(site: device.site.site, changes: first)
        try SiteRoots.publish(draft, signatures: [try SiteRoots.sign(draft, keyFile: key("root.key"))], site: device.site.site)
        // The attacker, with the leaked key, signs serial 2^40.
        let catalogURL = device.site.site.appendingPathComponent(SiteLayout.catalog)
        var catalog = try JSONCoding.decode(Catalog.self, from: Data(contentsOf: catalogURL))
        catalog.serial = 1 << 40
        catalog.rootVersion = 1
        let forged = try catalog.jsonData()
        try forged.write(to: catalogURL)
        try SigningKeyFile.sign(forged, keyFile: key("publisher.key")).jsonData()
            .write(to: device.site.site.appendingPathComponent(SiteLayout.catalogSignature))
        let (fastForwarded, _) = try await device.run(["check-update"], against: ManifestServer(root: device.site.site))
        #expect(fastForwarded.status == 3, "\(fastForwarded.stderr)")
        // Recovery: root 2 revokes the leaked key and delegates a new one; v3 is published
        // with it, at the serial the publisher's own history gives (far below 2^40).
        var second = RootChanges()
        second.addCatalogKeys = [online2]
        second.revokeCatalogKeys = [device.site.publicKey]
        let draft2 = try SiteRoots.draft(site: device.site.site, changes: second)
        try SiteRoots.publish(draft2, signatures: [try SiteRoots.sign(draft2, keyFile: key("root.key"))], site: device.site.site)
        catalog.serial = 2
        try catalog.jsonData().write(to: catalogURL)
        try ReleaseBuilder.make(at: key("r3"), revision: 3)
        try Publisher.publish(
            release: key("r3"), site: device.site.site,
            options: PublishOptions(version: "v3", level: 3, validity: 3600, keyFile: key("online-2.key")))
        let (updated, _) = try await device.run(["update"], against: ManifestServer(root: device.site.site))
        #expect(updated.status == 0, "\(updated.stderr)")
        #expect(try snapshot(device.data.appendingPathComponent("current/de-berlin/base")) == snapshot(device.site.release(3, "de-berlin", "base")))
    }
}
