package import Foundation
package import MapModel
import MapPlatform
import Synchronization

/// Reads a site's catalog and manifests, checking every pin. Manifests are cached in the
/// data directory by hash, so an unchanged manifest is never downloaded twice.
package struct SiteClient: Sendable {
    package let source: any SiteSource
    package let cache: URL
    package let scratch: URL

    /// The largest catalog accepted (nothing pins its length).
    package static let catalogLimit: Int64 = Catalog.sizeLimit

    /// The largest signature file accepted.
    package static let signatureLimit: Int64 = 64 << 10

    /// Fetches the catalog and checks its signature against `trust`, its serial against
    /// `lastSerial` (rollback) and its expiry against `now` (freeze).
    package func catalog(trust: TrustPolicy, lastSerial: Int?, now: Date = Date()) async throws(MapLoaderError) -> Catalog {
        try await signedCatalog(trust: trust, root: nil, lastSerial: lastSerial, now: now, keepRoots: { _ in }).catalog
    }

    /// Fetches the catalog and accepts it, or says in one line why not: its signature (by a
    /// catalog key of the newest root of trust, walked to from `root`, or on a site without
    /// roots by a key of `trust`), its serial against `lastSerial` (rollback) and its expiry
    /// against `now` (freeze). This is the one place a catalog is accepted. A signed site's
    /// timestamp (``CatalogTimestamp``) is read first: when it pins `kept` (the catalog
    /// accepted before), that catalog is checked again and nothing else is fetched.
    /// - Parameter keepRoots: called with newer roots as soon as they are accepted, before
    ///   the catalog is checked: a root is trusted from then on even when the catalog is
    ///   refused (a revocation holds even if the site later hides the root that made it),
    ///   and after a revocation the serial accepted before is forgotten for good.
    package func signedCatalog(
        trust: TrustPolicy, root: RootMetadata?, lastSerial: Int?, kept: Data? = nil, now: Date = Date(),
        keepRoots: @escaping @Sendable (RootWalk) async -> Void
    ) async throws(MapLoaderError) -> AcceptedCatalog {
        // With mirrors, each is asked in turn until one serves a catalog that passes every
        // check: a mirror that is down, stale (rollback) or tampered with is skipped.
        // A root accepted from one mirror holds for the next: a mirror that hides a
        // revocation another mirror showed cannot get a revoked key's catalog accepted.
        let (cache, scratch) = (self.cache, self.scratch)
        let newest = Mutex<(root: RootMetadata?, revoked: Bool)>((root, false))
        let keep: @Sendable (RootWalk) async -> Void = { walk in
            newest.withLock { newest in
                if let root = walk.root, root.version > newest.root?.version ?? 0 { newest.root = root }
                newest.revoked = newest.revoked || walk.revoked
            }
            await keepRoots(walk)
        }
        do {
            return try await source.failingOver(from: .configured) { mirror in
                let (root, revoked) = newest.withLock { ($0.root, $0.revoked) }
                return try await SiteClient(source: mirror, cache: cache, scratch: scratch).signedCatalogFromSource(
                    trust: trust, root: root, lastSerial: revoked ? nil : lastSerial, kept: kept, now: now, keepRoots: keep)
            }
        } catch {
            throw MapLoaderError(error)
        }
    }

    private func signedCatalogFromSource(
        trust: TrustPolicy, root trusted: RootMetadata?, lastSerial: Int?, kept: Data?, now: Date,
        keepRoots: @Sendable (RootWalk) async -> Void
    ) async throws(MapLoaderError) -> AcceptedCatalog {
        var root = trusted
        var newRoots = 0
        var serialFloor = lastSerial
        var serialReset = false
        var data: Data
        var signature: Data?
        var pinnedBy: SignedTimestamp?
        let signed = trusted != nil || !trust.keys.isEmpty
        func walk(hint: Int?) async throws(MapLoaderError) {
            // Each batch of roots is trusted and kept as it is accepted: a walk that stops
            // (at its step limit, or at a root it refuses) still moves the device forward.
            do {
                try await walkRoots(from: root, hint: hint, anchors: trust.keys, now: now) { batch in
                    root = batch.root
                    newRoots += batch.fetched.count
                    if batch.revoked { (serialFloor, serialReset) = (nil, true) }
                    await keepRoots(batch)
                }
            } catch {
                // Roots this check accepted before the refusal are kept: the message says so.
                throw newRoots > 0 ? error.keepingRoots(upTo: root?.version ?? 0) : error
            }
        }
        // The catalog and its signature are two files: a publish between the two reads
        // gives a torn pair. Read both again (twice at most) before refusing.
        var attempt = 1
        while true {
            // A signed site's timestamp pins the catalog: a poll reads it alone when the
            // catalog is the one kept, and a catalog it pins needs no signature file.
            // The timestamp only ever saves bytes: one that is not signed, older than what
            // was accepted, or expired is passed over, and the catalog's signature decides.
            var fetched: Data?
            var stamp = signed ? try await signedTimestamp() : nil
            if let current = stamp {
                // Roots are walked before the timestamp is judged (a revoked key must not
                // vouch); a root hint the walk refuses passes the timestamp over, and the
                // catalog's own walk decides.
                do { try await walk(hint: current.timestamp.rootVersion) } catch { stamp = nil }
            }
            if let stamp, accepts(stamp, root: root, trust: trust, lastSerial: serialFloor, now: now) {
                let (vouched, read) = try await catalog(vouchedFor: stamp, kept: kept)
                if let vouched {
                    (data, pinnedBy) = (vouched, stamp)
                    break
                }
                fetched = read
            }
            if let fetched {
                data = fetched
            } else {
                data = try await source.fetchData(SiteLayout.catalog, limit: .atMost(Self.catalogLimit), scratch: scratch)
            }
            // The unchecked catalog only hints that the site has roots; once a root is
            // trusted, roots are always walked (a revoked key's catalog cannot hide them).
            try await walk(hint: (try? JSONCoding.decode(Catalog.self, from: data))?.rootVersion)
            // Unsigned catalogs pass only where no key and no root is trusted at all.
            if root == nil && trust.allowUnsigned && trust.keys.isEmpty { break }
            do {
                signature = try await checkSignature(of: data, trust: trust, root: root, now: now)
                break
            } catch .signatureRefused where attempt < 3 && (root != nil || !trust.keys.isEmpty) {
                attempt += 1
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        let catalog = try acceptable(data, root: root, lastSerial: serialFloor, now: now)
        return AcceptedCatalog(
            catalog: catalog, bytes: data, signature: signature, timestamp: pinnedBy?.file, root: root, newRoots: newRoots,
            serialReset: serialReset)
    }

    /// The catalog an accepted `stamp` vouches for: the kept one, one rebuilt from a delta
    /// against it, or one read whole. A catalog read whole that the stamp does not vouch for
    /// (published between the two reads, or a timestamp that lags) comes back as `read`:
    /// its own signature then decides, as on a site without a timestamp.
    private func catalog(vouchedFor stamp: SignedTimestamp, kept: Data?) async throws(MapLoaderError) -> (vouched: Data?, read: Data?) {
        if let kept, stamp.timestamp.vouches(for: kept) { return (kept, nil) }
        if let kept, let catalog = try await catalog(pinnedBy: stamp.timestamp.catalog, deltaFrom: kept), stamp.timestamp.vouches(for: catalog) {
            return (catalog, nil)
        }
        let catalog = try await source.fetchData(SiteLayout.catalog, limit: .atMost(Self.catalogLimit), scratch: scratch)
        return stamp.timestamp.vouches(for: catalog) ? (catalog, nil) : (nil, catalog)
    }

    /// The catalog `pin` names, rebuilt from the delta against `kept` that the publisher
    /// wrote; `nil` when the site has no such delta or it does not give the pinned bytes
    /// (the whole catalog is fetched then).
    private func catalog(pinnedBy pin: CatalogTimestamp.Pin, deltaFrom kept: Data) async throws(MapLoaderError) -> Data? {
        try await rebuilt(pin, fromDelta: SiteLayout.catalogDelta(to: pin.sha256, from: FileHashing.sha256(of: kept)), of: kept, limit: pin.size)
    }

    /// The file `pin` names, rebuilt from the zstd delta at `path` (at most `limit` bytes)
    /// against `kept`; `nil` when the site has no such delta or it does not give the pinned
    /// bytes (a metadata delta only ever saves bytes). Cancellation ends the operation.
    private func rebuilt(_ pin: FilePin, fromDelta path: String, of kept: Data, limit: Int64) async throws(MapLoaderError) -> Data? {
        let delta: Data
        do {
            delta = try await source.fetchData(path, limit: .atMost(limit), scratch: scratch)
        } catch .cancelled {
            throw .cancelled
        } catch {
            return nil
        }
        return pin.unpack(delta, prefix: kept)
    }

    /// The site's signed timestamp; `nil` when the site has none (published before
    /// timestamps, or unsigned), or it cannot be read whole, or it is not one.
    private func signedTimestamp() async throws(MapLoaderError) -> SignedTimestamp? {
        do {
            return try SignedTimestamp.parse(
                try await source.fetchData(SiteLayout.timestamp, limit: .atMost(SignedTimestamp.limit), scratch: scratch))
        } catch .cancelled {
            throw .cancelled
        } catch {
            // Missing (404, or 403 from a bucket that hides what it lacks), too long, cut
            // off or malformed: the catalog and its signature are read instead.
            return nil
        }
    }

    /// Whether a timestamp may stand in for the catalog's signature: signed by a catalog
    /// key of the newest root (or a trusted key), not older than the serial accepted
    /// before, not expired.
    private func accepts(_ stamp: SignedTimestamp, root: RootMetadata?, trust: TrustPolicy, lastSerial: Int?, now: Date) -> Bool {
        stamp.isSigned(trusting: root?.catalogPublicKeys(at: now) ?? trust.keys)
            && stamp.timestamp.serial >= lastSerial ?? .min && (stamp.timestamp.expires.map { $0 >= now } ?? true)
    }

    /// The catalog in `data`, once its content passes: format, numbers, serial, expiry.
    private func acceptable(_ data: Data, root: RootMetadata?, lastSerial: Int?, now: Date) throws(MapLoaderError) -> Catalog {
        let catalog: Catalog
        do {
            catalog = try JSONCoding.decode(Catalog.self, from: data)
        } catch {
            throw .invalidMetadata(what: source.describe(SiteLayout.catalog), detail: error.description)
        }
        guard catalog.formatVersion == Manifest.currentFormat else {
            throw .invalidMetadata(
                what: source.describe(SiteLayout.catalog),
                detail: "format \(catalog.formatVersion) is not supported by this maploader; upgrade it")
        }
        guard (0...SiteLimits.serial).contains(catalog.serial) else {
            throw .invalidMetadata(
                what: source.describe(SiteLayout.catalog),
                detail: "serial \(catalog.serial) is outside 0…\(SiteLimits.serial)")
        }
        if let entry = catalog.versions.first(where: { RelativePath.normalized($0.manifest) != $0.manifest }) {
            throw .invalidMetadata(
                what: source.describe(SiteLayout.catalog),
                detail: "version \(entry.version) names its manifest at '\(entry.manifest)', not a plain path inside the site")
        }
        if let entry = catalog.versions.first(where: {
            !FilePin(sha256: $0.sha256, size: $0.size).isWellFormed(sizes: 1...SiteLimits.metadataBytes)
                || !($0.unpacked?.isWellFormed(sizes: 1...Int64(Manifest.sizeLimit)) ?? true)
        }) {
            throw .invalidMetadata(
                what: source.describe(SiteLayout.catalog),
                detail:
                    "version \(entry.version) pins a manifest of \(entry.size) bytes (\(entry.unpacked?.size ?? 0) unpacked; outside 1…\(SiteLimits.metadataBytes) and 1…\(Manifest.sizeLimit)) or a malformed hash"
            )
        }
        guard catalog.entry(catalog.current) != nil else {
            throw .invalidMetadata(
                what: source.describe(SiteLayout.catalog),
                detail: "current version \(catalog.current) is not among its versions")
        }
        if let lastSerial, catalog.serial < lastSerial {
            throw .rollbackRefused(
                "\(source.describe(SiteLayout.catalog)) has serial \(catalog.serial), older than serial \(lastSerial) accepted before: the server offers an outdated catalog (a stale mirror or a rollback attack); nothing was changed"
            )
        }
        if let expires = catalog.expires, expires < now {
            throw .rollbackRefused(
                "\(source.describe(SiteLayout.catalog)) expired at \(expires.formatted(.iso8601)): the publisher must publish or re-sign it, or the server is replaying an old one; nothing was changed"
            )
        }
        return catalog
    }

    /// Checks the signature of `catalog` and returns the signature file's bytes.
    private func checkSignature(
        of catalog: Data, trust: TrustPolicy, root: RootMetadata?,
        now: Date
    ) async throws(MapLoaderError) -> Data {
        let site = source.baseURL.absoluteString
        guard root != nil || !trust.keys.isEmpty else {
            throw .signatureRefused(
                "no publisher key is trusted for \(site): trust the publisher's public key, or allow unsigned catalogs for a site you control"
            )
        }
        let data: Data
        do {
            data = try await source.fetchData(SiteLayout.catalogSignature, limit: .atMost(Self.signatureLimit), scratch: scratch)
        } catch .httpStatus(_, 404) {
            if trust.allowUnsigned || root != nil {
                throw .signatureRefused(
                    "\(site) has no catalog.json.sig, but a publisher key is trusted for this data directory: a signed site may not become unsigned, and allowing unsigned catalogs does not change that; if the publisher really stopped signing, forget the trusted keys first"
                )
            }
            throw .signatureRefused(
                "\(site) has no catalog.json.sig: the site is unsigned; ask the publisher to sign it, or allow unsigned catalogs for a site you control"
            )
        }
        let keys = root?.catalogPublicKeys(at: now) ?? trust.keys
        guard let signature = try? JSONCoding.decode(CatalogSignature.self, from: data),
            signature.isValid(for: catalog, trusting: keys)
        else {
            if let root {
                throw .signatureRefused(
                    "catalog.json at \(site) is not signed by a catalog key of root \(root.version): it was altered, or signed with a key that root revoked, let expire or never delegated; nothing was changed"
                )
            }
            throw .signatureRefused(
                "catalog.json at \(site) is not signed by a trusted key: it was altered, or signed with another key; nothing was changed")
        }
        return data
    }

    /// Runs `work` on the blocking threads, never Swift's cooperative pool: reading,
    /// hashing and decoding a manifest or one of its parts (up to ``Manifest/sizeLimit``).
    /// `nil` only when the blocking threads could not run it.
    package static func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T? {
        try? await offActor(work)
    }

    /// A cached manifest's bytes, when present and still matching their hash.
    package static func cachedData(_ sha256: String, in cache: URL) -> Data? {
        guard let data = try? Data(contentsOf: cache.appendingPathComponent(sha256)),
            FileHashing.sha256(of: data) == sha256
        else { return nil }
        return data
    }

    /// Fetches (or reads from cache) the manifest of `version`, checked against the catalog's
    /// pin; of a split manifest, the parts `parts` says (each pinned by the index).
    package func manifest(
        _ version: String, in catalog: Catalog,
        parts: ManifestParts = .all, knownFrom: [String] = []
    ) async throws(MapLoaderError) -> Manifest {
        guard let entry = catalog.entry(version) else {
            throw .versionUnavailable(installed: version, current: catalog.current)
        }
        let cache = self.cache
        var data = await Self.offPool { Self.cachedData(entry.cacheKey, in: cache) } ?? nil
        if data == nil {
            let fetched = try await manifestFile(entry, in: catalog)
            _ = await Self.offPool {
                try? FileSystem.makeDirectories(cache)
                try? fetched.write(to: cache.appendingPathComponent(entry.cacheKey), options: .atomic)
            }
            data = fetched
        }
        let bytes = data!
        var manifest: Manifest
        switch await Self.offPool({ Result { () throws(JSONProblem) in try Manifest.decode(bytes) } }) {
        case .success(let decoded)?: manifest = decoded
        case .failure(let error)?: throw .invalidMetadata(what: source.describe(entry.manifest), detail: error.description)
        case nil: throw .cancelled
        }
        if let problem = ManifestValidation.problem(in: manifest) ?? (manifest.version == version ? nil : "it names version \(manifest.version)") {
            throw .invalidMetadata(what: source.describe(entry.manifest), detail: problem)
        }
        guard !manifest.stubs.isEmpty else { return manifest }
        manifest = try await resolve(manifest, parts: parts, knownFrom: knownFrom)
        if let problem = ManifestValidation.problem(in: manifest) {
            throw .invalidMetadata(what: source.describe(entry.manifest) + " with its parts", detail: problem)
        }
        return manifest
    }

    /// The manifest of `entry` as its cache keeps it: the JSON where the catalog pins it
    /// (rebuilt from a delta against a manifest kept in the cache where the site has one,
    /// else fetched and unpacked), else the packed file.
    private func manifestFile(_ entry: Catalog.Entry, in catalog: Catalog) async throws(MapLoaderError) -> Data {
        if let json = try await manifestFromDelta(entry, in: catalog) { return json }
        let fetched = try await source.fetchPinned(entry.manifest, pins: entry.pins, pinnedBy: "catalog", scratch: scratch)
        guard let unpacked = entry.unpacked, !unpacked.matches(fetched) else { return fetched }
        guard let json = unpacked.unpack(fetched) else {
            throw .invalidMetadata(
                what: source.describe(entry.manifest),
                detail: "it does not unpack to the JSON the catalog pins (\(unpacked.sha256.prefix(12))…): the publisher wrote a wrong pin")
        }
        return json
    }

    /// The manifest JSON of `entry`, rebuilt from the publisher's delta against the newest
    /// of the versions just before it (``SiteLayout/manifestDeltaDepth``) whose JSON the
    /// cache keeps; `nil` when there is none, the site has no such delta, or it does not
    /// give the pinned bytes (the manifest is fetched whole then).
    private func manifestFromDelta(_ entry: Catalog.Entry, in catalog: Catalog) async throws(MapLoaderError) -> Data? {
        guard let unpacked = entry.unpacked, let index = catalog.versions.firstIndex(of: entry) else { return nil }
        for older in catalog.versions[max(0, index - SiteLayout.manifestDeltaDepth)..<index].reversed() {
            guard let base = older.unpacked, let kept = Self.cachedData(base.sha256, in: cache) else { continue }
            // The delta is never longer than the packed manifest (the publisher writes it only then).
            return try await rebuilt(
                unpacked, fromDelta: SiteLayout.manifestDelta(to: unpacked.sha256, from: base.sha256), of: kept, limit: entry.size)
        }
        return nil
    }

    /// A value with every stored property given.
    package init(source: any SiteSource, cache: URL, scratch: URL) {
        self.source = source
        self.cache = cache
        self.scratch = scratch
    }
}
