package import Foundation
package import MapModel
/// A root file and its signature file, as the site serves them.
package struct RootFile: Sendable, Hashable {
    package let version: Int
    package let file: Data
    package let signature: Data
}

/// A catalog that passed every check, as published, with the root of trust it relies on.
package struct AcceptedCatalog: Sendable {
    package let catalog: Catalog
    /// The catalog's bytes and its signature file's (`nil` for an unsigned site, or when
    /// the timestamp pinned the catalog).
    package let bytes: Data
    package let signature: Data?
    /// The timestamp file that pinned the catalog; `nil` when its signature file did.
    package let timestamp: Data?
    /// The newest root accepted; `nil` on a site without roots.
    package let root: RootMetadata?
    /// The root versions accepted by this check, oldest first (to keep, for export).
    package let newRoots: [RootFile]
    /// One of them revoked a catalog key, so the serial accepted before no longer counts.
    package let serialReset: Bool
}

/// Roots accepted by one walk of the chain.
package struct RootWalk: Sendable {
    /// The newest root; `nil` on a site without roots.
    package var root: RootMetadata?
    /// The root files fetched and accepted, oldest first.
    package var fetched: [RootFile] = []
    /// Whether a step revoked a catalog key (``RootChain/revokesCatalogKey(_:_:)``).
    package var revoked = false
}

extension SiteClient {
    /// The most root versions one check walks (a device years behind catches up in a few checks).
    static let rootStepsPerCheck = 1024

    /// Walks the site's roots from `trusted` (N → N+1 → … until the site has no next one),
    /// accepting each as ``RootChain`` says; with none trusted yet, from root 1, anchored by
    /// `anchors`, when the catalog `hint`s that the site has roots.
    func walkRoots(
        from trusted: RootMetadata?, hint: Int?, anchors: [PublicKey],
        now: Date
    ) async throws(MapLoaderError) -> RootWalk {
        guard trusted != nil || hint != nil else { return RootWalk() }
        let site = source.baseURL.absoluteString
        if trusted == nil, anchors.isEmpty {
            throw .signatureRefused("no publisher key is trusted for \(site): trust one of the site's root or catalog keys")
        }
        var current = trusted
        var fetched: [RootFile] = []
        var revoked = false
        while fetched.count < Self.rootStepsPerCheck {
            let version = (current?.version ?? 0) + 1
            let file: Data
            do {
                file = try await source.fetchData(RootMetadata.path(version), limit: .atMost(RootMetadata.byteLimit), scratch: scratch)
            } catch .httpStatus(_, 404) {
                break
            }
            let signatureData: Data
            do {
                signatureData = try await source.fetchData(
                    RootMetadata.signaturePath(version), limit: .atMost(RootMetadata.byteLimit),
                    scratch: scratch)
            } catch .httpStatus(_, 404) {
                throw .signatureRefused(
                    "\(source.describe(RootMetadata.path(version))) has no signature file: the site is broken or tampered with; nothing was changed")
            }
            guard let signatures = try? JSONCoding.decode(CatalogSignature.self, from: signatureData) else {
                throw .signatureRefused("\(source.describe(RootMetadata.signaturePath(version))) is not a signature file; nothing was changed")
            }
            do {
                let next = try RootChain.accept(file, signatures: signatures, after: current, anchors: anchors)
                revoked = revoked || RootChain.revokesCatalogKey(current, next)
                current = next
            } catch {
                throw .signatureRefused("\(source.describe(RootMetadata.path(version))) is refused: \(error.description); nothing was changed")
            }
            fetched.append(RootFile(version: version, file: file, signature: signatureData))
        }
        guard let current else {
            throw .signatureRefused(
                "catalog.json at \(site) names root \(hint ?? 0), but the site has no \(RootMetadata.path(1)); nothing was changed")
        }
        if let hint, hint > current.version {
            throw .signatureRefused(
                "catalog.json at \(site) names root \(hint), but the newest root the site has is \(current.version); nothing was changed")
        }
        if let expires = current.expires, expires < now {
            throw .rollbackRefused(
                "root \(current.version) of \(site) expired at \(expires.formatted(.iso8601)) and the site has no newer one: the publisher must sign a new root, or the server is withholding it; nothing was changed"
            )
        }
        return RootWalk(root: current, fetched: fetched, revoked: revoked)
    }
}
