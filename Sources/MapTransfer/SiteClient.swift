import Foundation
import MapModel
import MapPlatform

/// Reads a site's catalog and manifests, checking every pin. Manifests are cached in the
/// data directory by hash, so an unchanged manifest is never downloaded twice.
package struct SiteClient: Sendable {
    package let source: any SiteSource
    package let cache: URL
    package let scratch: URL

    /// The largest catalog accepted (nothing pins its length).
    package static let catalogLimit: Int64 = 4 << 20

    /// The largest signature file accepted.
    package static let signatureLimit: Int64 = 64 << 10

    /// Fetches the catalog and checks its signature against `trust`, its serial against
    /// `lastSerial` (rollback) and its expiry against `now` (freeze).
    package func catalog(trust: TrustPolicy, lastSerial: Int?, now: Date = Date()) async throws(MapLoaderError) -> Catalog {
        try await signedCatalog(trust: trust, lastSerial: lastSerial, now: now).catalog
    }

    /// ``catalog(trust:lastSerial:now:)`` with the bytes it was read from: the catalog and
    /// its signature file as published (`nil` for an unsigned site), to keep for export.
    package func signedCatalog(trust: TrustPolicy, lastSerial: Int?, now: Date = Date()) async throws(MapLoaderError)
        -> (catalog: Catalog, bytes: Data, signature: Data?) {
        // With mirrors, each is asked in turn until one serves a catalog that passes every
        // check: a mirror that is down, stale (rollback) or tampered with is skipped.
        guard let mirrored = source as? MirroredSource, mirrored.mirrors.count > 1 else {
            return try await signedCatalogFromSource(trust: trust, lastSerial: lastSerial, now: now)
        }
        var first: MapLoaderError?
        for mirror in mirrored.mirrors {
            let client = SiteClient(source: mirror, cache: cache, scratch: scratch)
            do {
                return try await client.signedCatalogFromSource(trust: trust, lastSerial: lastSerial, now: now)
            } catch {
                if error == .cancelled { throw error }
                first = first ?? error
            }
        }
        throw first!
    }

    private func signedCatalogFromSource(trust: TrustPolicy, lastSerial: Int?, now: Date) async throws(MapLoaderError)
        -> (catalog: Catalog, bytes: Data, signature: Data?) {
        var data = try await source.fetchData(SiteLayout.catalog, limit: .atMost(Self.catalogLimit), scratch: scratch)
        var signature: Data?
        // Unsigned catalogs pass only where no key is trusted at all: once a publisher key is
        // trusted (given now or saved by an earlier run), a signed site may not turn unsigned.
        if !(trust.allowUnsigned && trust.keys.isEmpty) {
            // The catalog and its signature are two files: a publish between the two reads
            // gives a torn pair. Read both again (twice at most) before refusing.
            var attempt = 1
            while true {
                do {
                    signature = try await checkSignature(of: data, trust: trust)
                    break
                } catch .signatureRefused where attempt < 3 && !trust.keys.isEmpty {
                    attempt += 1
                    try? await Task.sleep(for: .milliseconds(200))
                    data = try await source.fetchData(SiteLayout.catalog, limit: .atMost(Self.catalogLimit), scratch: scratch)
                }
            }
        }
        let catalog: Catalog
        do {
            catalog = try JSONCoding.decode(Catalog.self, from: data)
        } catch {
            throw .invalidMetadata(what: source.describe(SiteLayout.catalog), detail: error.description)
        }
        guard catalog.formatVersion == Manifest.currentFormat else {
            throw .invalidMetadata(what: source.describe(SiteLayout.catalog),
                                   detail: "format \(catalog.formatVersion) is not supported by this maploader; upgrade it")
        }
        guard (0...SiteLimits.serial).contains(catalog.serial) else {
            throw .invalidMetadata(what: source.describe(SiteLayout.catalog),
                                   detail: "serial \(catalog.serial) is outside 0…\(SiteLimits.serial)")
        }
        if let entry = catalog.versions.first(where: { !(1...SiteLimits.metadataBytes).contains($0.size) || $0.sha256.count != 64 }) {
            throw .invalidMetadata(what: source.describe(SiteLayout.catalog),
                                   detail: "version \(entry.version) pins a manifest of \(entry.size) bytes (outside 1…\(SiteLimits.metadataBytes)) or a malformed hash")
        }
        guard catalog.entry(catalog.current) != nil else {
            throw .invalidMetadata(what: source.describe(SiteLayout.catalog),
                                   detail: "current version \(catalog.current) is not among its versions")
        }
        if let lastSerial, catalog.serial < lastSerial {
            throw .rollbackRefused("\(source.describe(SiteLayout.catalog)) has serial \(catalog.serial), older than serial \(lastSerial) accepted before: the server offers an outdated catalog (a stale mirror or a rollback attack); nothing was changed")
        }
        if let expires = catalog.expires, expires < now {
            throw .rollbackRefused("\(source.describe(SiteLayout.catalog)) expired at \(expires.formatted(.iso8601)): the publisher must publish or re-sign it, or the server is replaying an old one; nothing was changed")
        }
        return (catalog, data, signature)
    }

    /// Checks the signature of `catalog` and returns the signature file's bytes.
    private func checkSignature(of catalog: Data, trust: TrustPolicy) async throws(MapLoaderError) -> Data {
        let site = source.baseURL.absoluteString
        guard !trust.keys.isEmpty else {
            throw .signatureRefused("no publisher key is trusted for \(site): pass --trust-key with the publisher's public key, or --allow-unsigned for a site you control")
        }
        let data: Data
        do {
            data = try await source.fetchData(SiteLayout.catalogSignature, limit: .atMost(Self.signatureLimit), scratch: scratch)
        } catch .httpStatus(_, 404) {
            if trust.allowUnsigned {
                throw .signatureRefused("\(site) has no catalog.json.sig, but a publisher key is trusted for this data directory: a signed site may not become unsigned, and --allow-unsigned does not change that; if the publisher really stopped signing, run 'maploader forget-keys' first")
            }
            throw .signatureRefused("\(site) has no catalog.json.sig: the site is unsigned; ask the publisher to sign it (publish --key), or pass --allow-unsigned for a site you control")
        }
        guard let signature = try? JSONCoding.decode(CatalogSignature.self, from: data),
              signature.isValid(for: catalog, trusting: trust.keys) else {
            throw .signatureRefused("catalog.json at \(site) is not signed by a trusted key: it was altered, or signed with another key; nothing was changed")
        }
        return data
    }

    /// A cached manifest's bytes, when present and still matching their hash.
    package static func cachedData(_ sha256: String, in cache: URL) -> Data? {
        guard let data = try? Data(contentsOf: cache.appendingPathComponent(sha256)),
              FileHashing.sha256(of: data) == sha256 else { return nil }
        return data
    }

    /// Fetches (or reads from cache) the manifest of `version`, checked against the catalog's
    /// pin; of a split manifest, the parts `parts` says (each pinned by the index).
    package func manifest(_ version: String, in catalog: Catalog,
                          parts: ManifestParts = .all) async throws(MapLoaderError) -> Manifest {
        guard let entry = catalog.entry(version) else {
            throw .versionUnavailable(installed: version, current: catalog.current)
        }
        var data = Self.cachedData(entry.sha256, in: cache)
        if data == nil {
            let fetched = try await source.fetchData(entry.manifest, limit: .exactly(entry.size), scratch: scratch)
            let actual = FileHashing.sha256(of: fetched)
            guard actual == entry.sha256 else {
                throw .integrityFailed(what: source.describe(entry.manifest),
                                       detail: "SHA-256 is \(actual.prefix(12))…, the catalog pins \(entry.sha256.prefix(12))…")
            }
            try? FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
            try? fetched.write(to: cache.appendingPathComponent(entry.sha256), options: .atomic)
            data = fetched
        }
        var manifest: Manifest
        do {
            manifest = try Manifest.decode(data!)
        } catch {
            throw .invalidMetadata(what: source.describe(entry.manifest), detail: error.description)
        }
        if let problem = ManifestValidation.problem(in: manifest) ?? (manifest.version == version ? nil : "it names version \(manifest.version)") {
            throw .invalidMetadata(what: source.describe(entry.manifest), detail: problem)
        }
        guard !manifest.stubs.isEmpty else { return manifest }
        manifest = try await resolve(manifest, parts: parts)
        if let problem = ManifestValidation.problem(in: manifest) {
            throw .invalidMetadata(what: source.describe(entry.manifest) + " with its parts", detail: problem)
        }
        return manifest
    }

    /// A value with every stored property given.
    package init(source: any SiteSource, cache: URL, scratch: URL) {
        self.source = source
        self.cache = cache
        self.scratch = scratch
    }
}
