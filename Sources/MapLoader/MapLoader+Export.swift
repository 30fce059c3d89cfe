public import Foundation
import MapModel
import MapPlanner
import MapPlatform
import MapStore
import MapTransfer

extension MapLoader {
    /// Writes a minimal site into `folder` (new or empty) that another device installs from
    /// with no network: the signed catalog exactly as published, the manifest of the
    /// installed version, and the installed files of `ids` (leaves, or inner nodes for all
    /// their installed leaves) under `trees/<tree-hash>/`. The receiving loader checks the
    /// catalog's signature, the manifest's pin and every file's hash through the tree hash,
    /// as for any site, and later updates from the real server as usual. Works offline;
    /// the maps must be at the version the accepted catalog names as current.
    @discardableResult
    public func export(_ ids: [String], to folder: URL) async throws(MapLoaderError) -> ExportReport {
        guard !ids.isEmpty else { throw .invalidParameters("name at least one installed package to export") }
        let destination = folder.standardizedFileURL
        let existing = FileSystem.names(in: destination.path)
        guard existing.isEmpty else {
            throw .invalidParameters("\(destination.path) is not empty: export into a new or empty folder")
        }
        return try await enqueue(.export) { loader, operation in
            let state = try operation.store.state()
            guard let version = state.version, let manifestSHA = state.manifest else {
                throw MapLoaderError.invalidParameters("nothing is installed to export")
            }
            let (catalogFile, signatureFile, timestampFile) = operation.acceptance.keptFiles
            guard let catalogBytes = try? Data(contentsOf: catalogFile),
                let catalog = try? JSONCoding.decode(Catalog.self, from: catalogBytes)
            else {
                throw MapLoaderError.invalidMetadata(
                    what: catalogFile.path,
                    detail: "no accepted catalog is kept; check for updates once while the site is reachable, then export")
            }
            guard catalog.current == version, let entry = catalog.entry(version) else {
                throw MapLoaderError.invalidParameters(
                    "the installed maps are version \(version) but the site's current version is \(catalog.current): update, then export"
                )
            }
            let signature = try? Data(contentsOf: signatureFile)
            let timestamp = try? Data(contentsOf: timestampFile)
            let settings = try operation.store.settings()
            let keys =
                settings.trustedRoot?.catalogPublicKeys(at: Date())
                ?? (settings.trustedKeys ?? []).compactMap(PublicKey.init(base64:)) + loader.configuration.trust.keys
            // The catalog travels with what proved it: its signature, or the timestamp that pinned it.
            let signed = signature.map {
                (try? JSONCoding.decode(CatalogSignature.self, from: $0))?.isValid(for: catalogBytes, trusting: keys) ?? false
            }
            let stamped = timestamp.map { file in
                (try? SignedTimestamp.parse(file)).map { $0.isSigned(trusting: keys) && $0.timestamp.vouches(for: catalogBytes) } ?? false
            }
            if !keys.isEmpty, signed == false || stamped == false || (signed == nil && stamped == nil) {
                throw MapLoaderError.signatureRefused(
                    "the kept catalog and its signature do not match; check for updates while the site is reachable, then export")
            }
            guard let manifestBytes = try? Data(contentsOf: operation.manifestCache.appendingPathComponent(manifestSHA)),
                FileHashing.sha256(of: manifestBytes) == manifestSHA,
                let manifest = SiteClient.cachedManifest(manifestSHA, in: operation.manifestCache)
            else {
                throw MapLoaderError.invalidMetadata(
                    what: "the manifest of \(version)",
                    detail: "it is not in the cache; read the package tree while the site is reachable, then export")
            }
            // The stick's catalog must pin the manifest it carries (packed, or its JSON).
            guard entry.pins.contains(FilePin(sha256: manifestSHA, size: Int64(manifestBytes.count))) else {
                throw MapLoaderError.invalidMetadata(
                    what: "the manifest of \(version)",
                    detail: "the kept catalog pins another copy of it; check for updates while the site is reachable, then export")
            }
            // A split manifest travels with all its parts: the stick is a site of its own.
            let parts = try Manifest.decode(manifestBytes).stubs.map { stub in
                (SiteLayout.blob(stub.part!.sha256), operation.manifestCache.appendingPathComponent(stub.part!.sha256))
            }
            var leaves = Set<String>()
            for id in ids {
                guard let node = manifest.root.allNodes.first(where: { $0.id == id }) else {
                    throw MapLoaderError.unknownPackage(
                        id, suggestion: PackageTreeBuilder.suggestion(for: id, among: manifest.root.allNodes.map(\.id)))
                }
                let installed = node.leaves.map(\.id).filter { state.packages[$0] != nil }
                guard !installed.isEmpty else { throw MapLoaderError.notInstalled(id) }
                leaves.formUnion(installed)
            }
            let store = operation.store
            let groups = leaves.sorted().flatMap { leaf in (state.packages[leaf] ?? [:]).sorted { $0.key < $1.key }.map { (leaf, $0.key, $0.value) } }
            let hub = loader.hub
            let bytes: Int64 = try await offActor {
                var total: Int64 = 0
                for (index, (package, group, installed)) in groups.enumerated() {
                    hub.progress(.export, .extract, bytes: total, items: index, totalItems: groups.count, item: "\(package)/\(group)")
                    let tree = destination.appendingPathComponent(SiteLayout.tree(installed.treeHash))
                    guard FileStatus.of(tree.path) == nil else { continue }  // two packages with one tree
                    let files = try TreeCopy.copy(
                        from: store.groupDirectory(package: package, group: group), into: tree,
                        limits: .init(files: installed.files, bytes: installed.size),
                        isCancelled: { Task.isCancelled })
                    guard TreeHash.of(files) == installed.treeHash else {
                        throw MapLoaderError.integrityFailed(
                            what: "\(package)/\(group) on this device",
                            detail: "its files were changed since they were installed; repair, then export")
                    }
                    total += installed.size
                }
                let manifestFile = destination.appendingPathComponent(entry.manifest)
                try FileSystem.makeDirectories(manifestFile.deletingLastPathComponent())
                try FileSystem.write(manifestBytes, to: manifestFile)
                for (path, cached) in parts {
                    let file = destination.appendingPathComponent(path)
                    try FileSystem.makeDirectories(file.deletingLastPathComponent())
                    try FileSystem.write(Data(contentsOf: cached), to: file)
                }
                // The root chain travels too, so a device that installs from the stick later
                // walks the fleet's roots from where the stick left it.
                let roots = catalogFile.deletingLastPathComponent().appendingPathComponent("root")
                for name in (try? FileSystem.entryNames(roots.path)) ?? [] {
                    let file = String(decoding: name, as: UTF8.self)
                    try FileSystem.makeDirectories(destination.appendingPathComponent("root"))
                    try FileSystem.write(
                        Data(contentsOf: roots.appendingPathComponent(file)),
                        to: destination.appendingPathComponent("root").appendingPathComponent(file))
                }
                // The catalog goes last, as on any site: a reader never sees it before its files.
                if let signature { try FileSystem.write(signature, to: destination.appendingPathComponent(SiteLayout.catalogSignature)) }
                try FileSystem.write(catalogBytes, to: destination.appendingPathComponent(SiteLayout.catalog))
                if let timestamp { try FileSystem.write(timestamp, to: destination.appendingPathComponent(SiteLayout.timestamp)) }
                return total
            }
            return ExportReport(folder: destination.path, packages: leaves.sorted(), version: version, groups: groups.count, bytes: bytes)
        }
    }
}
