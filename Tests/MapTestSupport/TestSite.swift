import Foundation
import ManifestServer
import MapLoader
import MapPublisher

/// A published site served over real HTTP on 127.0.0.1, and data directories to install into.
package final class TestSite: Sendable {
    package let dir = TemporaryDirectory("maploader-site")
    package let server: ManifestServer
    package let url: String

    /// Publishes releases `revisions` (v1, v2, …) and serves the site with `faults`.
    /// The publisher's public key; loaders made by ``loader(dataDirectory:attempts:)`` trust it.
    package let publicKey: PublicKey

    package init(revisions: [Int] = [1], faults: FaultPlan = FaultPlan(), patchDepth: Int = 3) throws {
        publicKey = try SigningKeyFile.generate(at: dir.path("publisher.key"))
        for revision in revisions { try Self.publish(revision, patchDepth: patchDepth, in: dir) }
        server = ManifestServer(root: dir.path("site"), faults: faults)
        url = "http://127.0.0.1:\(try server.start())"
    }

    deinit { server.stop() }

    package var site: URL { dir.path("site") }

    /// Makes release `revision` and publishes it as `v<revision>`, signed.
    package func publish(_ revision: Int, patchDepth: Int = 3) throws {
        try Self.publish(revision, patchDepth: patchDepth, in: dir)
    }

    private static func publish(_ revision: Int, patchDepth: Int, in dir: TemporaryDirectory) throws {
        try ReleaseBuilder.make(at: dir.path("r\(revision)"), revision: revision)
        try Publisher.publish(
            release: dir.path("r\(revision)"), site: dir.path("site"),
            options: PublishOptions(
                version: "v\(revision)", level: 3, patchDepth: patchDepth,
                validity: 3600, keyFile: dir.path("publisher.key")))
    }

    /// Removes the site's timestamp and catalog deltas: the site as a publisher before
    /// timestamps wrote it, where the catalog's signature file alone proves the catalog.
    package func removeTimestamp() throws {
        try FileManager.default.removeItem(at: site.appendingPathComponent(SiteLayout.timestamp))
        try? FileManager.default.removeItem(at: site.appendingPathComponent(SiteLayout.deltas))
    }

    /// Removes the site's manifest deltas: a device then reads every manifest whole.
    package func removeManifestDeltas() throws {
        let deltas = site.appendingPathComponent(SiteLayout.deltas)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: deltas.path)) ?? [] where name.hasPrefix("manifest-") {
            try FileManager.default.removeItem(at: deltas.appendingPathComponent(name))
        }
    }

    /// Writes `catalog` as its publisher would, signed with `keyFile` (the publisher's key
    /// by default): the signature file, the catalog, and the timestamp that pins it.
    package func writeSigned(_ catalog: Data, keyFile: URL? = nil) throws {
        let key = try SigningKeyFile.read(keyFile ?? dir.path("publisher.key"))
        try CatalogSignature.sign(catalog, with: key).jsonData().write(to: site.appendingPathComponent(SiteLayout.catalogSignature))
        try catalog.write(to: site.appendingPathComponent(SiteLayout.catalog))
        let timestamp = CatalogTimestamp(of: try JSONCoding.decode(Catalog.self, from: catalog), bytes: catalog)
        try SignedTimestamp.file(of: timestamp) { try CatalogSignature.sign($0, with: key) }
            .write(to: site.appendingPathComponent(SiteLayout.timestamp))
    }

    /// A loader with a fresh (or given) data directory and quick retries.
    package func loader(
        dataDirectory: URL? = nil, attempts: Int = 3, delegateDelivery: MapLoader.DelegateDelivery = .mainActor
    ) -> MapLoader {
        let data = dataDirectory ?? dir.path("data-\(UUID().uuidString)")
        return MapLoader(
            configuration: .init(
                server: url, dataDirectory: data,
                retry: .init(attempts: attempts, initialDelay: 0.01, maxDelay: 0.05),
                trust: TrustPolicy(keys: [publicKey]), delegateDelivery: delegateDelivery))
    }

    /// The current manifest as published.
    package func manifest(_ version: String) throws -> Manifest {
        try Manifest.decode(Data(contentsOf: site.appendingPathComponent(SiteLayout.manifest(version))))
    }

    /// The blob file of `package`/`group` in `version`.
    package func blob(_ package: String, _ group: String, version: String = "v1") throws -> URL {
        let leaf = try manifest(version).root.leaves.first { $0.id == package }!
        return site.appendingPathComponent(SiteLayout.blob(leaf.artifacts![group]!.sha256))
    }

    /// The release's source folder of a group.
    package func release(_ revision: Int, _ package: String, _ group: String) -> URL {
        dir.path("r\(revision)/data/\(package)/\(group)")
    }
}

extension MapLoader {
    /// The data directory's `current/` folder.
    package nonisolated var currentFolder: URL { configuration.dataDirectory.appendingPathComponent("current") }
}
