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
    /// How many root versions this check accepted (each was kept as it was accepted).
    package let newRoots: Int
    /// One of them revoked a catalog key, so the serial accepted before no longer counts.
    package let serialReset: Bool
}

/// Roots accepted by a walk of the chain, handed over a batch at a time.
package struct RootWalk: Sendable {
    /// The newest root; `nil` on a site without roots.
    package var root: RootMetadata?
    /// The root files fetched and accepted since the last batch, oldest first.
    package var fetched: [RootFile] = []
    /// Whether a step revoked a catalog key (``RootChain/revokesCatalogKey(_:_:)``).
    package var revoked = false
}

extension SiteClient {
    /// The most root versions one walk takes (a device further behind goes on from there at
    /// the next walk: every root is kept as it is accepted).
    static let rootStepsPerCheck = 1024
    /// Roots held in memory before they are handed to `keep` (each up to
    /// ``RootMetadata/byteLimit``): a walk's memory is a batch, however long the chain.
    static let rootBatch = 16

    /// Walks the site's roots from `trusted` (N → N+1 → … until the site has no next one),
    /// accepting each as ``RootChain`` says; with none trusted yet, from root 1, anchored by
    /// `anchors`, when the catalog `hint`s that the site has roots. The roots accepted go to
    /// `keep` every ``rootBatch`` of them and before the walk returns or throws, so a root
    /// is trusted from then on even when a later one, or the catalog, is refused.
    func walkRoots(
        from trusted: RootMetadata?, hint: Int?, anchors: [PublicKey],
        now: Date, keep: (RootWalk) async -> Void
    ) async throws(MapLoaderError) {
        guard trusted != nil || hint != nil else { return }
        let site = source.baseURL.absoluteString
        if trusted == nil, anchors.isEmpty {
            throw .signatureRefused("no publisher key is trusted for \(site): trust one of the site's root or catalog keys")
        }
        var batch = RootWalk(root: trusted)
        func flush(_ batch: inout RootWalk) async {
            guard !batch.fetched.isEmpty else { return }
            await keep(batch)
            batch = RootWalk(root: batch.root)
        }
        do {
            try await walkRoots(into: &batch, anchors: anchors) { await flush(&$0) }
            await flush(&batch)
            try check(batch.root, from: trusted, hint: hint, now: now, site: site)
        } catch {
            await flush(&batch)
            throw error
        }
    }

    /// The walk's end: the newest root `current` must be the one the catalog `hint`s at
    /// (or newer) and must not have expired.
    private func check(
        _ current: RootMetadata?, from trusted: RootMetadata?, hint: Int?, now: Date, site: String
    ) throws(MapLoaderError) {
        guard let current else {
            throw .signatureRefused(
                "catalog.json at \(site) names root \(hint ?? 0), but the site has no \(RootMetadata.path(1)); nothing was changed")
        }
        if let hint, hint > current.version {
            let walked = current.version - (trusted?.version ?? 0)
            throw .signatureRefused(
                walked >= Self.rootStepsPerCheck
                    ? "catalog.json at \(site) names root \(hint); this check accepted and kept roots up to \(current.version) (at most \(Self.rootStepsPerCheck) a walk): check again to go on from there"
                    : "catalog.json at \(site) names root \(hint), but the newest root the site has is \(current.version); nothing was changed")
        }
        if let expires = current.expires, expires < now {
            throw .rollbackRefused(
                "root \(current.version) of \(site) expired at \(expires.formatted(.iso8601)) and the site has no newer one: the publisher must sign a new root, or the server is withholding it; nothing was changed"
            )
        }
    }

    /// Accepts the site's next roots into `batch` (its root the newest so far), calling
    /// `full` whenever it holds ``rootBatch`` roots, until the site has no next one or
    /// ``rootStepsPerCheck`` were taken. A root or signature file past
    /// ``RootMetadata/byteLimit`` is a refusal, as any other bad root is.
    private func walkRoots(
        into batch: inout RootWalk, anchors: [PublicKey], full: (inout RootWalk) async -> Void
    ) async throws(MapLoaderError) {
        for _ in 0..<Self.rootStepsPerCheck {
            let version = (batch.root?.version ?? 0) + 1
            let file: Data
            do {
                file = try await source.fetchData(RootMetadata.path(version), limit: .atMost(RootMetadata.byteLimit), scratch: scratch)
            } catch .httpStatus(_, 404) {
                return
            } catch .integrityFailed(_, let detail) {
                throw .signatureRefused("\(source.describe(RootMetadata.path(version))) is refused: \(detail); nothing was changed")
            }
            let signatureData: Data
            do {
                signatureData = try await source.fetchData(
                    RootMetadata.signaturePath(version), limit: .atMost(RootMetadata.byteLimit),
                    scratch: scratch)
            } catch .httpStatus(_, 404) {
                throw .signatureRefused(
                    "\(source.describe(RootMetadata.path(version))) has no signature file: the site is broken or tampered with; nothing was changed")
            } catch .integrityFailed(_, let detail) {
                throw .signatureRefused("\(source.describe(RootMetadata.signaturePath(version))) is refused: \(detail); nothing was changed")
            }
            guard let signatures = try? JSONCoding.decode(CatalogSignature.self, from: signatureData) else {
                throw .signatureRefused("\(source.describe(RootMetadata.signaturePath(version))) is not a signature file; nothing was changed")
            }
            do {
                let next = try RootChain.accept(file, signatures: signatures, after: batch.root, anchors: anchors)
                batch.revoked = batch.revoked || RootChain.revokesCatalogKey(batch.root, next)
                batch.root = next
            } catch {
                throw .signatureRefused("\(source.describe(RootMetadata.path(version))) is refused: \(error.description); nothing was changed")
            }
            batch.fetched.append(RootFile(version: version, file: file, signature: signatureData))
            if batch.fetched.count >= Self.rootBatch { await full(&batch) }
        }
    }
}

extension MapLoaderError {
    /// A refusal of a check that accepted and kept roots up to `version` before it, saying
    /// so where it said that nothing was changed.
    func keepingRoots(upTo version: Int) -> MapLoaderError {
        func noted(_ message: String) -> String {
            message.replacingOccurrences(
                of: "; nothing was changed", with: "; roots up to \(version) were accepted and kept, nothing else was changed")
        }
        switch self {
        case .signatureRefused(let message): return .signatureRefused(noted(message))
        case .rollbackRefused(let message): return .rollbackRefused(noted(message))
        default: return self
        }
    }
}
