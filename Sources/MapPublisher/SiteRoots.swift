import Foundation
import MapModel
import MapPlatform

/// What changes from one root version to the next (``SiteRoots/draft(site:changes:)``).
package struct RootChanges: Sendable {
    /// The new set of root keys; `nil` keeps the current one.
    package var rootKeys: [PublicKey]?
    /// The new threshold; `nil` keeps the current one (lowered to the number of root keys),
    /// or for root 1 a majority of its root keys.
    package var threshold: Int?
    /// Catalog keys to delegate (or to delegate again with a new expiry).
    package var addCatalogKeys: [PublicKey] = []
    /// Catalog keys to revoke.
    package var revokeCatalogKeys: [PublicKey] = []
    /// Seconds the added catalog keys stay valid; `nil` until revoked.
    package var catalogKeyValidity: TimeInterval?
    /// Seconds the new root stays valid; `nil` never expires.
    package var validity: TimeInterval?

    package init() {}
}

/// A site's root versions, as a publisher makes them: draft the next one, sign it with
/// root keys (each possibly on another machine, each signature a file of its own), and
/// publish it once a threshold of the old and of the new root keys have signed.
package enum SiteRoots {
    /// The newest root published on `site`, with its bytes; `nil` when the site has none.
    package static func newest(in site: URL) throws -> (root: RootMetadata, bytes: Data)? {
        let folder = site.appendingPathComponent("root")
        let names = (try? FileSystem.entryNames(folder.path)) ?? []
        let versions = names.compactMap { bytes -> Int? in
            let name = String(decoding: bytes, as: UTF8.self)
            return name.hasSuffix(".json") ? Int(name.dropLast(5)) : nil
        }
        guard let version = versions.max() else { return nil }
        let bytes = try Data(contentsOf: site.appendingPathComponent(RootMetadata.path(version)))
        do {
            return (try JSONCoding.decode(RootMetadata.self, from: bytes), bytes)
        } catch {
            throw PublishError("\(site.path)/\(RootMetadata.path(version)) is unreadable: \(error.description)")
        }
    }

    /// The draft of the root after the site's newest (root 1 for a site without roots),
    /// as the bytes every root key signs.
    package static func draft(site: URL, changes: RootChanges, now: Date = Date()) throws -> Data {
        let current = try newest(in: site)?.root
        guard current != nil || changes.rootKeys != nil else {
            throw PublishError("\(site.path) has no root yet: name its root keys (--root-key, one per key) for root 1")
        }
        let rootKeys = changes.rootKeys?.map(\.base64) ?? current!.rootKeys
        var catalogKeys = (current?.catalogKeys ?? []).filter { key in
            !(changes.revokeCatalogKeys + changes.addCatalogKeys).contains { $0.base64 == key.key }
        }
        let keyExpiry = changes.catalogKeyValidity.map { now.addingTimeInterval($0) }
        catalogKeys += changes.addCatalogKeys.map { RootMetadata.CatalogKey(key: $0.base64, expires: keyExpiry) }
        let threshold = changes.threshold ?? min(current?.threshold ?? rootKeys.count / 2 + 1, rootKeys.count)
        let root = RootMetadata(
            version: (current?.version ?? 0) + 1, expires: changes.validity.map { now.addingTimeInterval($0) },
            rootKeys: rootKeys, threshold: threshold, catalogKeys: catalogKeys)
        if let problem = root.problem { throw PublishError("the new root would be invalid: \(problem)") }
        guard !catalogKeys.isEmpty else {
            throw PublishError("the new root would delegate no catalog key: nothing could sign catalogs; add one with --catalog-key")
        }
        return try root.jsonData()
    }

    /// One root key's signature of a draft, to merge at ``publish(_:signatures:site:)``.
    package static func sign(_ draft: Data, keyFile: URL) throws -> CatalogSignature {
        guard let root = try? JSONCoding.decode(RootMetadata.self, from: draft) else {
            throw PublishError("this is not a root draft (make one with 'maploader root new')")
        }
        let key = try SigningKeyFile.publicKey(of: keyFile)
        guard root.rootKeys.contains(key.base64) || root.version > 1 else {
            throw PublishError(
                "key \(key.id) is not a root key of root \(root.version): only its root keys (and those of the root before it) sign it")
        }
        return try SigningKeyFile.sign(draft, keyFile: keyFile)
    }

    /// Publishes a signed draft as the site's next root: the signatures are merged and the
    /// root must pass what every client checks (``RootChain``). The signature file lands
    /// first, then the root, so a client never sees a root without its signatures.
    @discardableResult
    package static func publish(_ draft: Data, signatures: [CatalogSignature], site siteURL: URL) throws -> RootMetadata {
        let merged = CatalogSignature(
            signatures: Array(Set(signatures.flatMap(\.signatures)))
                .sorted { ($0.keyid, $0.sig) < ($1.keyid, $1.sig) })
        let current = try newest(in: siteURL)?.root
        let root: RootMetadata
        do {
            root = try RootChain.accept(
                draft, signatures: merged, after: current,
                anchors: Array((try? JSONCoding.decode(RootMetadata.self, from: draft))?.allKeys ?? []))
        } catch {
            throw PublishError("root draft not published: \(error)")
        }
        let site = SiteWriter(root: siteURL)
        try site.prepare()
        defer { site.cleanUp() }
        try site.write(try merged.jsonData(), at: RootMetadata.signaturePath(root.version))
        try site.write(draft, at: RootMetadata.path(root.version))
        return root
    }

    /// The root version a catalog signed by `keyFile` relies on (the site's newest), after
    /// checking that root delegates the key; `nil` for a site without roots.
    static func rootVersion(for site: URL, keyFile: URL?, now: Date = Date()) throws -> Int? {
        guard let root = try newest(in: site)?.root else { return nil }
        guard let keyFile else {
            throw PublishError("\(site.path) has roots: its catalog must be signed with a catalog key of root \(root.version) (--key)")
        }
        let key = try SigningKeyFile.publicKey(of: keyFile)
        guard root.catalogPublicKeys(at: now).contains(key) else {
            throw PublishError(
                "key \(key.id) (\(keyFile.path)) is not a catalog key of root \(root.version), or its delegation expired: clients would refuse the catalog; delegate it with 'maploader root new --catalog-key \(key.base64)', signed by the root keys"
            )
        }
        return root.version
    }
}
