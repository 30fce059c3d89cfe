import Foundation
import MapModel
import MapPlatform
import MapStore
import MapTransfer

/// Accepting a site's catalog: the one place that decides which catalog a data directory
/// goes by. The site client checks what the site sent (the signature by a trusted key or
/// root of trust, the serial against a rollback, the expiry against a freeze, each mirror
/// in turn); this adds what the data directory knows and keeps: the publisher keys it
/// trusts (a configured key it does not know is refused unless ``TrustPolicy/addKeys``),
/// the newest root of trust and the last serial accepted, and the accepted catalog as
/// published, with its signature and roots (for exports and offline reads).
struct CatalogAcceptance {
    /// The data directory whose settings and caches hold what was accepted before.
    let store: Store
    /// The configured trust, added to the keys the data directory saved.
    let trust: TrustPolicy

    /// Fetches the catalog through `client` and accepts it under the configured keys plus
    /// the saved ones, then saves the keys, the roots and the serial so later runs refuse
    /// rollbacks. A reader of a read-only or full data directory goes on with what it
    /// accepted without saving.
    func accept(from client: SiteClient) async throws -> (Catalog, Settings) {
        let settings = try store.settings()
        let saved = (settings.trustedKeys ?? []).compactMap(PublicKey.init(base64:))
        let unknown = trust.keys.filter { !saved.contains($0) }
        if let first = saved.first, let added = unknown.first, !trust.addKeys {
            let others = saved.count > 1 ? " and \(saved.count - 1) more" : ""
            throw MapLoaderError.signatureRefused(
                "this data directory trusts publisher key \(first.base64.prefix(12))…\(others), and \(added.base64.prefix(12))… is another key: nothing was changed; to trust it beside them add it (TrustPolicy.addKeys), to replace them forget the trusted keys first"
            )
        }
        let keys = Array(Set(saved + trust.keys))
        let (store, folder) = (self.store, keptFiles.catalog.deletingLastPathComponent())
        let accepted = try await client.signedCatalog(
            trust: TrustPolicy(keys: keys, allowUnsigned: trust.allowUnsigned), root: settings.trustedRoot,
            lastSerial: settings.lastSerial, kept: try? Data(contentsOf: keptFiles.catalog)
        ) { walk in
            // A root is trusted as soon as it is accepted, whatever becomes of the catalog.
            _ = try? await store.updateSettings { settings in
                guard let root = walk.root, root.version > settings.trustedRoot?.version ?? 0 else { return }
                settings.trustedRoot = root
                if walk.revoked { settings.lastSerial = nil }
            }
            Self.keep(walk.fetched, in: folder)
        }
        let catalog = accepted.catalog
        keep(catalog, accepted)
        let allKeys = keys.map(\.base64).sorted()
        guard
            catalog.serial > settings.lastSerial ?? .min || allKeys != (settings.trustedKeys ?? []).sorted()
                || accepted.newRoots > 0
        else {
            return (catalog, settings)
        }
        let record: @Sendable (inout Settings) -> Void = { settings in
            settings.lastSerial = max(catalog.serial, settings.lastSerial ?? .min)
            let merged = Set(settings.trustedKeys ?? []).union(allKeys).sorted()
            settings.trustedKeys = merged.isEmpty ? nil : merged
        }
        if let updated = try? await store.updateSettings(record) { return (catalog, updated) }
        var unsaved = settings
        record(&unsaved)
        return (catalog, unsaved)
    }

    /// The accepted catalog as published, with its signature or the timestamp that pinned
    /// it (for ``MapLoader/export(_:to:)``, and so a poll reads the timestamp alone).
    var keptFiles: (catalog: URL, signature: URL, timestamp: URL) {
        let folder = store.directory.siteCache
        return (
            folder.appendingPathComponent(SiteLayout.catalog), folder.appendingPathComponent(SiteLayout.catalogSignature),
            folder.appendingPathComponent(SiteLayout.timestamp)
        )
    }

    /// The last catalog accepted, as kept; `nil` when none is.
    func keptCatalog() -> Catalog? {
        (try? Data(contentsOf: keptFiles.catalog)).flatMap { try? JSONCoding.decode(Catalog.self, from: $0) }
    }

    /// Keeps accepted root files beside the kept catalog in `folder`, so an export carries
    /// the chain. Best effort: a failure only means an export without them.
    private static func keep(_ roots: [RootFile], in folder: URL) {
        for root in roots {
            let file = folder.appendingPathComponent(RootMetadata.path(root.version))
            try? FileSystem.makeDirectories(file.deletingLastPathComponent())
            try? Store.writeAtomically(folder.appendingPathComponent(RootMetadata.signaturePath(root.version))) { root.signature }
            try? Store.writeAtomically(file) { root.file }
        }
    }

    /// Keeps the bytes of an accepted catalog (and its signature or timestamp) when they
    /// are new: a newer serial, none kept yet, or a revocation that voided the serials
    /// accepted before. Best effort: a failure only means no
    /// export, and a poll that reads the catalog again.
    private func keep(_ catalog: Catalog, _ accepted: AcceptedCatalog) {
        let (file, signatureFile, timestampFile) = keptFiles
        guard keptCatalog().map({ $0.serial < catalog.serial }) ?? true || accepted.serialReset else { return }
        try? FileSystem.makeDirectories(file.deletingLastPathComponent())
        for (kept, proof) in [(signatureFile, accepted.signature), (timestampFile, accepted.timestamp)] {
            if let proof {
                try? Store.writeAtomically(kept) { proof }
            } else {
                FileSystem.removeTree(kept)
            }
        }
        try? Store.writeAtomically(file) { accepted.bytes }
    }
}
