import Foundation
import MapPublisher
import MapStore
import MapTestSupport
import Testing

@testable import MapLoader

/// Roots of trust as a fleet operator uses them: a device that last checked long ago walks
/// every root version to the newest, untouched, through online-key and root-key rotations;
/// broken links of the chain are refused and change nothing.
@Suite struct RootRotationTests {
    /// A site with root keys A, B, C (2 of 3) and the helpers to sign and publish roots.
    struct Fleet {
        let site: TestSite
        let keys: [String: PublicKey]

        init(site: TestSite) throws {
            self.site = site
            var keys: [String: PublicKey] = ["online-1": site.publicKey]
            for name in ["a", "b", "c", "d", "e", "f", "online-2"] {
                keys[name] = try SigningKeyFile.generate(at: site.dir.path("\(name).key"))
            }
            self.keys = keys
        }

        func keyFile(_ name: String) -> URL { name == "online-1" ? site.dir.path("publisher.key") : site.dir.path("\(name).key") }

        /// Drafts the next root with `changes`, signs it with `signers`, publishes it.
        @discardableResult
        func root(_ changes: RootChanges, signedBy signers: [String]) throws -> RootMetadata {
            let draft = try SiteRoots.draft(site: site.site, changes: changes)
            let signatures = try signers.map { try SiteRoots.sign(draft, keyFile: keyFile($0)) }
            return try SiteRoots.publish(draft, signatures: signatures, site: site.site)
        }

        /// Publishes release `revision` as `v<revision>`, the catalog signed with `online`.
        func publish(_ revision: Int, signedWith online: String) throws {
            try ReleaseBuilder.make(at: site.dir.path("r\(revision)"), revision: revision)
            try Publisher.publish(
                release: site.dir.path("r\(revision)"), site: site.site,
                options: PublishOptions(version: "v\(revision)", level: 3, validity: 3600, keyFile: keyFile(online)))
        }
    }

    /// The device's saved settings (its trusted root among them).
    static func settings(_ loader: MapLoader) throws -> Settings {
        try Store(root: loader.configuration.dataDirectory).settings()
    }

    static func changes(
        rootKeys: [PublicKey]? = nil, threshold: Int? = nil, add: [PublicKey] = [],
        revoke: [PublicKey] = []
    ) -> RootChanges {
        var changes = RootChanges()
        changes.rootKeys = rootKeys
        changes.threshold = threshold
        changes.addCatalogKeys = add
        changes.revokeCatalogKeys = revoke
        changes.validity = 3600
        return changes
    }

    @Test func aDeviceThatLastCheckedAtVersionOneWalksEveryRotationToTheNewest() async throws {
        let fleet = try Fleet(site: TestSite())
        let k = fleet.keys
        let device = fleet.site.loader()
        try await device.install(["de-berlin"])
        // v2: roots arrive (A, B, C; 2 of 3), delegating the key that signed v1.
        try fleet.root(Self.changes(rootKeys: [k["a"]!, k["b"]!, k["c"]!], threshold: 2, add: [k["online-1"]!]), signedBy: ["a", "b"])
        try fleet.publish(2, signedWith: "online-1")
        // v3: the online key is rotated (root 2, signed by A and C) and the old one revoked.
        try fleet.root(Self.changes(add: [k["online-2"]!], revoke: [k["online-1"]!]), signedBy: ["a", "c"])
        #expect(throws: PublishError.self, "the revoked key can no longer sign a catalog") {
            try fleet.publish(3, signedWith: "online-1")
        }
        try fleet.publish(3, signedWith: "online-2")
        // v4: the root keys are replaced by D, E, F (root 3: 2 of the old and 2 of the new sign it).
        try fleet.root(Self.changes(rootKeys: [k["d"]!, k["e"]!, k["f"]!]), signedBy: ["b", "c", "d", "f"])
        try fleet.publish(4, signedWith: "online-2")

        // The device, untouched since v1 and trusting only the first online key, updates
        // straight to v4 and now trusts root 3.
        let report = try await device.performUpdate(strategy: .delta)
        #expect(report.toVersion == "v4")
        let settings = try Self.settings(device)
        #expect(settings.trustedRoot?.version == 3)
        #expect(settings.trustedRoot?.rootKeys == [k["d"]!, k["e"]!, k["f"]!].map(\.base64))
        #expect(try snapshot(device.currentFolder.appendingPathComponent("de-berlin/base")) == snapshot(fleet.site.release(4, "de-berlin", "base")))
    }

    /// The configured site shows root 2, which revokes the first online key, and then fails
    /// (its catalog is damaged); a hostile mirror hides root 2 and serves a catalog that the
    /// leaked key signed. The root accepted from the configured site holds for the mirror:
    /// refused, and the serial the mirror claims is not saved.
    @Test func aMirrorThatHidesARevocationCannotUseTheRevokedKey() async throws {
        let fleet = try Fleet(site: TestSite())
        let k = fleet.keys
        let files = FileManager.default
        try fleet.root(Self.changes(rootKeys: [k["a"]!, k["b"]!, k["c"]!], threshold: 2, add: [k["online-1"]!]), signedBy: ["a", "b"])
        try fleet.publish(2, signedWith: "online-1")
        let data = fleet.site.dir.path("device")
        try await fleet.site.loader(dataDirectory: data).install(["de-berlin"])
        let (configured, mirror) = (fleet.site.dir.path("configured"), fleet.site.dir.path("mirror"))
        try files.copyItem(at: fleet.site.site, to: mirror)
        try fleet.root(Self.changes(add: [k["online-2"]!], revoke: [k["online-1"]!]), signedBy: ["a", "b"])
        try fleet.publish(3, signedWith: "online-2")
        try files.copyItem(at: fleet.site.site, to: configured)
        for site in [configured, mirror] {
            try files.removeItem(at: site.appendingPathComponent(SiteLayout.timestamp))
            try files.removeItem(at: site.appendingPathComponent(SiteLayout.deltas))
        }
        try Data("[1, 2".utf8).write(to: configured.appendingPathComponent(SiteLayout.catalog))
        let catalogFile = mirror.appendingPathComponent(SiteLayout.catalog)
        var catalog = try JSONCoding.decode(Catalog.self, from: Data(contentsOf: catalogFile))
        catalog.serial = 99
        let bytes = try catalog.jsonData()
        try bytes.write(to: catalogFile)
        try SigningKeyFile.sign(bytes, keyFile: fleet.keyFile("online-1")).jsonData()
            .write(to: mirror.appendingPathComponent(SiteLayout.catalogSignature))
        let device = MapLoader(
            configuration: .init(
                server: configured.path, dataDirectory: data, trust: TrustPolicy(keys: [fleet.site.publicKey]),
                mirrors: [mirror.path]))
        await #expect(throws: MapLoaderError.self) { try await device.checkForUpdate() }
        let settings = try Self.settings(device)
        #expect(settings.trustedRoot?.version == 2)
        #expect(settings.lastSerial != 99, "the mirror's catalog was accepted under the revoked key")
    }

    @Test func brokenLinksOfTheChainAreRefusedAndChangeNothing() async throws {
        let fleet = try Fleet(site: TestSite())
        let k = fleet.keys
        try fleet.root(Self.changes(rootKeys: [k["a"]!, k["b"]!, k["c"]!], threshold: 2, add: [k["online-1"]!]), signedBy: ["a", "b"])
        try fleet.publish(2, signedWith: "online-1")
        let device = fleet.site.loader()
        try await device.install(["de-berlin"])
        #expect(try Self.settings(device).trustedRoot?.version == 1)
        let before = try snapshot(device.currentFolder)

        // A root signed below the threshold: an attacker holding one root key.
        #expect(throws: PublishError.self) { try fleet.root(Self.changes(add: [k["online-2"]!]), signedBy: ["c"]) }
        let draft = try SiteRoots.draft(site: fleet.site.site, changes: Self.changes(add: [k["online-2"]!]))
        try draft.write(to: fleet.site.site.appendingPathComponent(RootMetadata.path(2)))
        try SiteRoots.sign(draft, keyFile: fleet.keyFile("c")).jsonData()
            .write(to: fleet.site.site.appendingPathComponent(RootMetadata.signaturePath(2)))
        await #expect {
            _ = try await device.checkForUpdate()
        } throws: { error in
            guard case MapLoaderError.signatureRefused(let detail) = error else { return false }
            return detail.contains("root/2.json is refused: it is signed by 1 of the root keys of root 1, which needs 2")
        }
        #expect(try Self.settings(device).trustedRoot?.version == 1)

        // Done right (A and B), the revocation of the first online key takes effect at the
        // device's next check: a catalog that key signs is refused from then on.
        try FileManager.default.removeItem(at: fleet.site.site.appendingPathComponent(RootMetadata.path(2)))
        try fleet.root(Self.changes(add: [k["online-2"]!], revoke: [k["online-1"]!]), signedBy: ["a", "b"])
        let catalogFile = fleet.site.site.appendingPathComponent(SiteLayout.catalog)
        var catalog = try JSONCoding.decode(Catalog.self, from: Data(contentsOf: catalogFile))
        catalog.serial += 1
        let bytes = try catalog.jsonData()
        try bytes.write(to: catalogFile)
        try SigningKeyFile.sign(bytes, keyFile: fleet.keyFile("online-1")).jsonData()
            .write(to: fleet.site.site.appendingPathComponent(SiteLayout.catalogSignature))
        await #expect {
            _ = try await device.checkForUpdate()
        } throws: { error in
            guard case MapLoaderError.signatureRefused(let detail) = error else { return false }
            return detail.contains("not signed by a catalog key of root 2")
        }
        #expect(try Self.settings(device).trustedRoot?.version == 2, "the new root was accepted")
        #expect(try snapshot(device.currentFolder) == before)

        // A device refuses a site that drops its roots, and a catalog naming a root it lacks.
        try FileManager.default.removeItem(at: fleet.site.site.appendingPathComponent("root"))
        await #expect(throws: MapLoaderError.self) { try await device.checkForUpdate() }
    }

    /// An export carries the root chain: a device that installs from the stick trusts the
    /// fleet's root and later rotates with it, from the server.
    @Test func aDeviceInstalledFromAStickRotatesWithTheFleet() async throws {
        let fleet = try Fleet(site: TestSite())
        let k = fleet.keys
        try fleet.root(Self.changes(rootKeys: [k["a"]!, k["b"]!, k["c"]!], threshold: 2, add: [k["online-1"]!]), signedBy: ["a", "b"])
        try fleet.publish(2, signedWith: "online-1")
        let first = fleet.site.loader()
        try await first.install(["de-berlin"])
        let stick = fleet.site.dir.path("stick")
        _ = try await first.export(["de-berlin"], to: stick)
        #expect(FileManager.default.fileExists(atPath: stick.appendingPathComponent(RootMetadata.path(1)).path))
        let data = fleet.site.dir.path("second")
        let second = MapLoader(
            configuration: .init(
                server: stick.path, dataDirectory: data,
                trust: TrustPolicy(keys: [k["online-1"]!])))
        try await second.install(["de-berlin"])
        #expect(try Self.settings(second).trustedRoot?.version == 1)
        try fleet.root(Self.changes(add: [k["online-2"]!], revoke: [k["online-1"]!]), signedBy: ["b", "c"])
        try fleet.publish(3, signedWith: "online-2")
        let online = MapLoader(configuration: .init(server: fleet.site.url, dataDirectory: data))
        let report = try await online.performUpdate()
        #expect(report.toVersion == "v3")
        #expect(try Self.settings(second).trustedRoot?.version == 2)
    }

    @Test func aRootDraftNeedsItsRootKeysAndACatalogKey() throws {
        let site = try TestSite()
        #expect(throws: PublishError.self, "root 1 needs root keys") {
            _ = try SiteRoots.draft(site: site.site, changes: RootChanges())
        }
        var noCatalogKey = RootChanges()
        noCatalogKey.rootKeys = [site.publicKey]
        #expect(throws: PublishError.self, "a root that delegates nothing") {
            _ = try SiteRoots.draft(site: site.site, changes: noCatalogKey)
        }
        var tooHigh = Self.changes(rootKeys: [site.publicKey], threshold: 2, add: [site.publicKey])
        tooHigh.validity = nil
        #expect(throws: PublishError.self, "a threshold above the number of root keys") {
            _ = try SiteRoots.draft(site: site.site, changes: tooHigh)
        }
    }

    /// A device that trusts root 1 of a fleet whose roots key `a` alone signs (threshold 1),
    /// delegating the first online key.
    static func deviceAtRootOne() async throws -> (Fleet, MapLoader) {
        let fleet = try Fleet(site: TestSite())
        let device = fleet.site.loader()
        try await device.install(["de-berlin"])
        try fleet.root(changes(rootKeys: [fleet.keys["a"]!], threshold: 1, add: [fleet.keys["online-1"]!]), signedBy: ["a"])
        try fleet.publish(2, signedWith: "online-1")
        _ = try await device.checkForUpdate()
        #expect(try settings(device).trustedRoot?.version == 1)
        return (fleet, device)
    }

    /// Writes roots `versions` to the fleet's site as a root operator would, each signed by
    /// key `a` alone (threshold 1) and delegating the first online key (`wrongSigner` signs
    /// one of them with another key instead), then signs the catalog again, naming the
    /// newest root.
    static func writeRoots(_ versions: ClosedRange<Int>, in fleet: Fleet, wrongSigner: (version: Int, key: String)? = nil) throws {
        let folder = fleet.site.site.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for version in versions {
            let root = RootMetadata(
                version: version, expires: Date().addingTimeInterval(3600), rootKeys: [fleet.keys["a"]!.base64], threshold: 1,
                catalogKeys: [.init(key: fleet.keys["online-1"]!.base64)])
            let data = try root.jsonData()
            let signer = wrongSigner?.version == version ? wrongSigner!.key : "a"
            try data.write(to: fleet.site.site.appendingPathComponent(RootMetadata.path(version)))
            try SigningKeyFile.sign(data, keyFile: fleet.keyFile(signer)).jsonData()
                .write(to: fleet.site.site.appendingPathComponent(RootMetadata.signaturePath(version)))
        }
        _ = try Publisher.resign(site: fleet.site.site, keyFile: fleet.keyFile("online-1"), validity: 3600)
    }

    /// A device more than a walk's 1,024 roots behind (issue "Hostile signed payloads",
    /// case 9) once never caught up: each check walked 1,024 roots, held them all in memory
    /// and was refused before it kept any, so the next check began again at the same root.
    /// Roots are kept a batch at a time now: the timestamp's walk stops at its limit with
    /// its roots kept, the catalog's walk goes on from there, and the device reaches the
    /// newest root, 1,101, in one check.
    @Test func aDeviceMoreThanAWalkBehindCatchesUp() async throws {
        let (fleet, device) = try await Self.deviceAtRootOne()
        let newest = 1_024 + 77  // a walk takes at most 1,024 roots
        try Self.writeRoots(2...newest, in: fleet)
        #expect(
            try JSONCoding.decode(Catalog.self, from: Data(contentsOf: fleet.site.site.appendingPathComponent(SiteLayout.catalog))).rootVersion
                == newest)
        _ = try await device.checkForUpdate()
        #expect(try Self.settings(device).trustedRoot?.version == newest)
    }

    /// A walk refused at a root keeps the roots it accepted before it (each is trusted as
    /// it is accepted): the revocations they carry hold, and the next check starts there.
    @Test func aRefusedRootKeepsTheRootsBeforeIt() async throws {
        let (fleet, device) = try await Self.deviceAtRootOne()
        try Self.writeRoots(2...41, in: fleet, wrongSigner: (41, "b"))
        let refusal = await #expect(throws: MapLoaderError.self) { try await device.checkForUpdate() }
        #expect(refusal?.description.contains("root/41.json is refused") == true, "\(String(describing: refusal))")
        #expect(
            refusal?.description.contains("roots up to 40 were accepted and kept, nothing else was changed") == true, "\(String(describing: refusal))"
        )
        #expect(try Self.settings(device).trustedRoot?.version == 40)
    }
}

/// The chain's rules on their own: one row per way a root can be wrong.
@Suite struct RootChainTests {
    static let dir = TemporaryDirectory("maploader-rootchain")
    static let keys: [PublicKey] = (0..<3).map { try! SigningKeyFile.generate(at: dir.path("k\($0).key")) }

    static func signed(_ root: RootMetadata, by signers: [Int]) throws -> (Data, CatalogSignature) {
        let data = try root.jsonData()
        let entries = try signers.flatMap { try SigningKeyFile.sign(data, keyFile: dir.path("k\($0).key")).signatures }
        return (data, CatalogSignature(signatures: entries))
    }

    static func root(_ version: Int, keys: [Int] = [0, 1, 2], threshold: Int = 2) -> RootMetadata {
        RootMetadata(
            version: version, expires: nil, rootKeys: keys.map { Self.keys[$0].base64 }, threshold: threshold,
            catalogKeys: [.init(key: Self.keys[0].base64)])
    }

    @Test(
        arguments: [
            ("version 2 after nothing", 2, [0, 1, 2], 2, [0, 1], "root 1 was asked for"),
            ("threshold 0", 1, [0, 1, 2], 0, [0, 1], "threshold 0"),
            ("threshold above the keys", 1, [0, 1], 3, [0, 1], "threshold 3"),
            ("a repeated root key", 1, [0, 0, 1], 2, [0, 1], "repeated"),
            ("signed by one of two needed", 1, [0, 1, 2], 2, [2], "signed by 1 of its own root keys"),
            ("a signature counted twice", 1, [0, 1, 2], 2, [1, 1], "signed by 1 of its own root keys"),
        ] as [(String, Int, [Int], Int, [Int], String)])
    func refusedWithNothingTrusted(_ name: String, version: Int, rootKeys: [Int], threshold: Int, signers: [Int], words: String) throws {
        let (data, signatures) = try Self.signed(Self.root(version, keys: rootKeys, threshold: threshold), by: signers)
        #expect(throws: RootRefusal.self, "\(name)") {
            _ = try RootChain.accept(data, signatures: signatures, after: nil, anchors: [Self.keys[0]])
        }
        do {
            _ = try RootChain.accept(data, signatures: signatures, after: nil, anchors: [Self.keys[0]])
        } catch {
            #expect(error.description.contains(words), "\(name): \(error)")
        }
    }

    @Test func aNewRootNeedsTheOldThresholdAndItsOwn() throws {
        let trusted = Self.root(1)
        // New root keys {2} alone (threshold 1): signed by the new key only, the old root refuses it.
        let next = Self.root(2, keys: [2], threshold: 1)
        let (data, onlyNew) = try Self.signed(next, by: [2])
        #expect(throws: RootRefusal.self) { _ = try RootChain.accept(data, signatures: onlyNew, after: trusted, anchors: []) }
        let (_, both) = try Self.signed(next, by: [0, 1, 2])
        #expect(try RootChain.accept(data, signatures: both, after: trusted, anchors: []).version == 2)
        // Anchors: root 1 must name a key the device trusts.
        let (first, signatures) = try Self.signed(Self.root(1), by: [0, 1])
        #expect(throws: RootRefusal.self) {
            _ = try RootChain.accept(
                first, signatures: signatures, after: nil, anchors: [PublicKey(base64: String(repeating: "A", count: 43) + "=")!])
        }
    }

}
