import Foundation
import MapModel
import MapPlanner
import MapPlatform
import MapStore
import MapTransfer

/// What an export writes beside the installed trees: the kept catalog with what proved it
/// (its signature or the timestamp that pinned it), the manifest of the installed version
/// with its parts, and the root chain. Each is checked as a site's would be before anything
/// is written, so a stick never carries metadata another device would refuse.
struct ExportBundle: Sendable {
    let catalogBytes: Data
    let signature: Data?
    let timestamp: Data?
    /// The catalog's entry of the exported version.
    let entry: Catalog.Entry
    let manifestBytes: Data
    let manifest: Manifest
    /// Each part of a split manifest: its path on the stick and its cached copy.
    let parts: [(path: String, cached: URL)]
    /// The folder of kept root files.
    let roots: URL

    /// The bundle of `version` (whose manifest has digest `manifestSHA`) from the files the
    /// operation keeps, checked with `keys`; or an error that says what to do first.
    static func gather(
        version: String, manifestSHA: String, operation: OperationContext, keys: [PublicKey]
    ) throws(MapLoaderError) -> ExportBundle {
        let (catalogFile, signatureFile, timestampFile) = operation.acceptance.keptFiles
        guard let catalogBytes = try? Data(contentsOf: catalogFile),
            let catalog = try? JSONCoding.decode(Catalog.self, from: catalogBytes)
        else {
            throw .invalidMetadata(
                what: catalogFile.path,
                detail: "no accepted catalog is kept; check for updates once while the site is reachable, then export")
        }
        guard catalog.current == version, let entry = catalog.entry(version) else {
            throw .invalidParameters(
                "the installed maps are version \(version) but the site's current version is \(catalog.current): update, then export")
        }
        let signature = try? Data(contentsOf: signatureFile)
        let timestamp = try? Data(contentsOf: timestampFile)
        try checkProof(of: catalogBytes, signature: signature, timestamp: timestamp, keys: keys)
        let (manifestBytes, manifest) = try cachedManifest(manifestSHA, of: version, pinnedBy: entry, in: operation.manifestCache)
        // A split manifest travels with all its parts: the stick is a site of its own.
        guard let stubs = try? Manifest.decode(manifestBytes).stubs else {
            throw .invalidMetadata(what: "the manifest of \(version)", detail: "its cached copy does not decode; check for updates, then export")
        }
        let parts = stubs.compactMap { stub in
            stub.part.map { (SiteLayout.blob($0.sha256), operation.manifestCache.appendingPathComponent($0.sha256)) }
        }
        return ExportBundle(
            catalogBytes: catalogBytes, signature: signature, timestamp: timestamp, entry: entry, manifestBytes: manifestBytes,
            manifest: manifest, parts: parts, roots: catalogFile.deletingLastPathComponent().appendingPathComponent("root"))
    }

    /// The catalog travels with what proved it: its signature, or the timestamp that pinned it.
    private static func checkProof(of catalogBytes: Data, signature: Data?, timestamp: Data?, keys: [PublicKey]) throws(MapLoaderError) {
        let signed = signature.map {
            (try? JSONCoding.decode(CatalogSignature.self, from: $0))?.isValid(for: catalogBytes, trusting: keys) ?? false
        }
        let stamped = timestamp.map { file in
            (try? SignedTimestamp.parse(file)).map { $0.isSigned(trusting: keys) && $0.timestamp.vouches(for: catalogBytes) } ?? false
        }
        if !keys.isEmpty, signed == false || stamped == false || (signed == nil && stamped == nil) {
            throw .signatureRefused("the kept catalog and its signature do not match; check for updates while the site is reachable, then export")
        }
    }

    /// The cached manifest `sha256` of `version`, which the catalog's `entry` must pin (packed,
    /// or its JSON).
    private static func cachedManifest(
        _ sha256: String, of version: String, pinnedBy entry: Catalog.Entry, in cache: URL
    ) throws(MapLoaderError) -> (Data, Manifest) {
        guard let bytes = try? Data(contentsOf: cache.appendingPathComponent(sha256)), FileHashing.sha256(of: bytes) == sha256,
            let manifest = SiteClient.cachedManifest(sha256, in: cache)
        else {
            throw .invalidMetadata(
                what: "the manifest of \(version)", detail: "it is not in the cache; read the package tree while the site is reachable, then export")
        }
        guard entry.pins.contains(FilePin(sha256: sha256, size: Int64(bytes.count))) else {
            throw .invalidMetadata(
                what: "the manifest of \(version)",
                detail: "the kept catalog pins another copy of it; check for updates while the site is reachable, then export")
        }
        return (bytes, manifest)
    }

    /// The installed leaves `ids` name (leaves, or inner nodes for their installed leaves).
    func leaves(_ ids: [String], installed: InstalledState) throws(MapLoaderError) -> Set<String> {
        var leaves = Set<String>()
        let nodes = manifest.root.allNodes
        for id in ids {
            guard let node = nodes.first(where: { $0.id == id }) else {
                throw .unknownPackage(id, suggestion: PackageTreeBuilder.suggestion(for: id, among: nodes.map(\.id)))
            }
            let present = node.leaves.map(\.id).filter { installed.packages[$0] != nil }
            guard !present.isEmpty else { throw .notInstalled(id) }
            leaves.formUnion(present)
        }
        return leaves
    }

    /// Writes the manifest, its parts and the root chain into `destination`, then the catalog
    /// last, as on any site: a reader never sees it before its files.
    func write(into destination: URL) throws {
        let manifestFile = destination.appendingPathComponent(entry.manifest)
        try FileSystem.makeDirectories(manifestFile.deletingLastPathComponent())
        try FileSystem.write(manifestBytes, to: manifestFile)
        for (path, cached) in parts {
            let file = destination.appendingPathComponent(path)
            try FileSystem.makeDirectories(file.deletingLastPathComponent())
            try FileSystem.write(Data(contentsOf: cached), to: file)
        }
        // The root chain travels too, so a device that installs from the stick later walks
        // the fleet's roots from where the stick left it.
        for name in (try? FileSystem.entryNames(roots.path)) ?? [] {
            let file = String(decoding: name, as: UTF8.self)
            try FileSystem.makeDirectories(destination.appendingPathComponent("root"))
            try FileSystem.write(
                Data(contentsOf: roots.appendingPathComponent(file)), to: destination.appendingPathComponent("root").appendingPathComponent(file))
        }
        if let signature { try FileSystem.write(signature, to: destination.appendingPathComponent(SiteLayout.catalogSignature)) }
        try FileSystem.write(catalogBytes, to: destination.appendingPathComponent(SiteLayout.catalog))
        if let timestamp { try FileSystem.write(timestamp, to: destination.appendingPathComponent(SiteLayout.timestamp)) }
    }
}
