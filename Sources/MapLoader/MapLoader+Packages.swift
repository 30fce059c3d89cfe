import Foundation
import MapDelta
import MapModel
import MapPlanner
import MapPlatform
import MapStore
import MapTransfer

extension MapLoader {
    /// Reads catalog, state and settings, and the manifest: the installed version's when
    /// `atInstalledVersion` (so new installs match what is installed), else the newest.
    /// `parts` says which parts of a split manifest to read: an update reads those holding
    /// installed packages, so its metadata grows with what is installed, not the catalog.
    /// Where packages are is looked up in the parts of the manifest read and of the
    /// installed one, as cached. `withPatchHistory` (an update's plan) adds the patch edges
    /// of older manifests a device far behind may chain through.
    func planningContext(
        _ operation: OperationContext, atInstalledVersion: Bool, parts: ManifestParts = .all, withPatchHistory: Bool = false
    ) async throws -> PlanningContext {
        operation.progress(.resolve)
        let client = try operation.siteClient()
        let (catalog, settings) = try await operation.acceptance.accept(from: client)
        let state = try operation.store.state()
        let version = atInstalledVersion ? (state.version ?? catalog.current) : catalog.current
        let known = [catalog.entry(version)?.cacheKey, state.manifest].compactMap { $0 }
        var manifest = try await client.manifest(version, in: catalog, parts: parts, knownFrom: known)
        if withPatchHistory, state.version != nil, state.version != version {
            manifest = try await client.withPatchHistory(manifest, in: catalog, installed: state)
        }
        return PlanningContext(
            catalog: catalog, manifest: manifest, state: state, settings: settings,
            selection: settings.selectedGroups(manifest.groups), decodes: PatchCodecs.available)
    }

    /// The publisher keys this data directory trusts (saved by earlier runs).
    public func trustedKeys() async throws(MapLoaderError) -> [TrustPolicy.Key] {
        try await enqueue(.list) { _, operation in (try operation.store.settings().trustedKeys ?? []).compactMap(PublicKey.init(base64:)) }
    }

    /// Stops trusting publisher keys saved in the data directory: `keys`, or all of them when
    /// `nil`. Keys given in the configuration are trusted (and saved) again on the next run.
    /// - Returns: the keys still trusted.
    @discardableResult
    public func forgetTrustedKeys(_ keys: [TrustPolicy.Key]? = nil) async throws(MapLoaderError) -> [TrustPolicy.Key] {
        try await enqueue(.forgetKeys) { _, operation in
            let settings = try await operation.store.updateSettings { settings in
                let forget = Set((keys ?? []).map(\.base64))
                let kept = keys == nil ? [] : (settings.trustedKeys ?? []).filter { !forget.contains($0) }
                settings.trustedKeys = kept.isEmpty ? nil : kept
            }
            return (settings.trustedKeys ?? []).compactMap(PublicKey.init(base64:))
        }
    }

    /// The package tree of the newest version with every node's state on this device.
    public func packageTree() async throws(MapLoaderError) -> PackageTree {
        try await enqueue(.list) { loader, operation in try await loader.treeAndManifest(operation).tree }
    }

    /// One package's status by id.
    public func package(_ id: String) async throws(MapLoaderError) -> PackageStatus {
        let tree = try await enqueue(.list) { loader, operation in try await loader.treeAndManifest(operation, parts: .holding([id])).tree }
        // Of a split manifest only the parts below `id` were read: the other nodes' states
        // are partial, and only this one is returned.
        guard let status = tree.packages.first(where: { $0.id == id }) else {
            throw .unknownPackage(id, suggestion: PackageTreeBuilder.suggestion(for: id, among: tree.packages.map(\.id)))
        }
        return status
    }

    /// The smallest package whose boundary (or, lacking one, box) contains the point;
    /// `nil` when none does.
    public func package(atLatitude latitude: Double, longitude: Double) async throws(MapLoaderError) -> PackageStatus? {
        guard (-90...90).contains(latitude), (-180...180).contains(longitude) else {
            throw .invalidParameters("latitude must be within ±90 and longitude within ±180")
        }
        return try await enqueue(.list) { loader, operation in
            let (tree, manifest) = try await loader.treeAndManifest(operation, parts: .around(latitude: latitude, longitude: longitude))
            guard let node = Locator.smallestNode(containing: latitude, longitude, in: manifest.root) else { return nil }
            return tree.packages.first { $0.id == node.id }
        }
    }

    /// The tree and manifest of the newest version; with the site unreachable (or none
    /// configured), those of what is installed, marked offline.
    private func treeAndManifest(
        _ operation: OperationContext, parts: ManifestParts = .all
    ) async throws -> (tree: PackageTree, manifest: Manifest) {
        let (context, offline) = try await readingContext(operation, parts: parts)
        let broken = try await quickCheck(context.state, in: operation)
        var tree = PackageTreeBuilder(context: context, inconsistent: broken).tree()
        tree.offline = offline
        return (tree, context.manifest)
    }

    /// The context of a read: the site's newest version, or, when the site cannot be
    /// reached and something is installed, the installed version from the data directory
    /// alone (an offline map app still shows what it has).
    private func readingContext(
        _ operation: OperationContext, parts: ManifestParts = .all, atInstalledVersion: Bool = false
    ) async throws -> (PlanningContext, PackageTree.Offline?) {
        if let change = operation.besideChange {
            let reason = "an \(change.rawValue) is running: this is the installed version until it finishes"
            guard let offline = try Self.offlineContext(operation, reason: reason, nothingInstalled: true) else {
                throw NothingToReadBeside()
            }
            return offline
        }
        do {
            return (try await planningContext(operation, atInstalledVersion: atInstalledVersion, parts: parts), nil)
        } catch let error as MapLoaderError {
            switch error {
            case .noServer, .connectionFailed, .httpStatus, .networkNotAllowed: break
            default: throw error
            }
            guard let offline = try Self.offlineContext(operation, reason: error.description) else { throw error }
            return offline
        }
    }

    /// The installed version's context from the data directory: state, settings, the
    /// cached manifest (the parts it has) and the last catalog accepted; `nil` when nothing
    /// is installed, unless `nothingInstalled` (a read beside a first install) lets the
    /// newest version of the catalog kept stand in.
    private static func offlineContext(
        _ operation: OperationContext, reason: String, nothingInstalled: Bool = false
    ) throws -> (PlanningContext, PackageTree.Offline)? {
        let store = operation.store
        let state = try store.state()
        let kept = operation.acceptance.keptCatalog()
        let standIn = nothingInstalled ? kept : nil
        guard let version = state.version ?? standIn?.current, let sha256 = state.manifest ?? standIn?.entry(version)?.cacheKey,
            let manifest = SiteClient.cachedManifest(sha256, in: store.directory.manifestCache, partial: true)
        else { return nil }
        let settings = try store.settings()
        let keptFile = operation.acceptance.keptFiles.catalog
        let catalog =
            kept
            ?? Catalog(
                serial: settings.lastSerial ?? 0, current: version,
                versions: [
                    Catalog.Entry(version: version, published: state.committed, manifest: SiteLayout.manifest(version), sha256: sha256, size: 1)
                ])
        let accepted = kept == nil ? nil : FileStatus.of(keptFile.path).map { Date(timeIntervalSince1970: $0.modified) }
        let context = PlanningContext(
            catalog: catalog, manifest: manifest, state: state, settings: settings,
            selection: settings.selectedGroups(manifest.groups), decodes: PatchCodecs.available)
        return (context, PackageTree.Offline(reason: reason, catalogAccepted: accepted))
    }

    /// The data groups and whether each is selected.
    public func dataGroups() async throws(MapLoaderError) -> [DataGroupStatus] {
        try await enqueue(.list) { loader, operation in
            let (context, _) = try await loader.readingContext(operation, atInstalledVersion: true)
            return context.manifest.groups.map { DataGroupStatus(group: $0, selected: context.selection.contains($0.id)) }
        }
    }

    /// Selects a data group for future installs and updates (`performUpdate` fetches it
    /// for installed packages).
    public func selectDataGroup(_ id: String) async throws(MapLoaderError) {
        try await changeSelection(id, selected: true)
    }

    /// Deselects a data group; required groups cannot be deselected. `performUpdate`
    /// removes its installed files.
    public func deselectDataGroup(_ id: String) async throws(MapLoaderError) {
        try await changeSelection(id, selected: false)
    }

    private func changeSelection(_ id: String, selected: Bool) async throws(MapLoaderError) {
        try await enqueue(selected ? .selectGroup : .deselectGroup) { loader, operation in
            // Offline, the installed version's manifest names the groups: the choice is kept
            // and applied by the next update.
            let (context, _) = try await loader.readingContext(operation, atInstalledVersion: true)
            guard let group = context.manifest.group(id) else {
                throw MapLoaderError.unknownGroup(id, known: context.manifest.groups.map(\.id))
            }
            if group.required && !selected { throw MapLoaderError.requiredGroup(id) }
            let settings = try await operation.store.updateSettings { $0.groups[id] = selected }
            loader.hub.emit(.groupsChanged(selected: settings.selectedGroups(context.manifest.groups).sorted()))
        }
    }
}

extension MapLoader {
    /// Attaches the caller's own key/value metadata to an installed package, as apps tag
    /// the regions they downloaded ("trip=2026-summer"): a value sets its key, `nil`
    /// removes it. Tags are kept across updates and removed with the package; they appear
    /// in ``PackageStatus/tags``. Works offline. Returns the package's tags afterwards.
    @discardableResult
    public func setTags(_ tags: [String: String?], on package: String) async throws(MapLoaderError) -> [String: String] {
        if let key = tags.keys.first(where: { $0.isEmpty || $0.contains("=") || $0.contains(where: \.isNewline) }) {
            throw .invalidParameters("tag key '\(key)' must be non-empty, without '=' or line breaks")
        }
        return try await enqueue(.tag) { _, operation in
            guard try operation.store.state().packages[package] != nil else { throw MapLoaderError.notInstalled(package) }
            let settings = try await operation.store.updateSettings { settings in
                var current = settings.tags?[package] ?? [:]
                for (key, value) in tags { current[key] = value }
                settings.tags = settings.tags ?? [:]
                settings.tags?[package] = current.isEmpty ? nil : current
                if settings.tags?.isEmpty == true { settings.tags = nil }
            }
            return settings.tags?[package] ?? [:]
        }
    }

    /// The caller's tags on an installed package (empty when it has none). Works offline.
    public func tags(of package: String) async throws(MapLoaderError) -> [String: String] {
        try await enqueue(.list) { _, operation in
            guard try operation.store.state().packages[package] != nil else { throw MapLoaderError.notInstalled(package) }
            return try operation.store.settings().tags?[package] ?? [:]
        }
    }
}

extension MapLoader {
    /// Every leaf package's outline (its published boundary, else its box) with its state
    /// on this device, to write as GeoJSON (``Coverage/geoJSON()``) or draw as an SVG
    /// world map (``Coverage/svg(width:)``).
    /// - Parameter installedOnly: only packages of which something is installed.
    public func coverage(installedOnly: Bool = false) async throws(MapLoaderError) -> Coverage {
        try await enqueue(.list) { loader, operation in
            let (tree, manifest) = try await loader.treeAndManifest(operation)
            return Coverage(tree: tree, manifest: manifest, installedOnly: installedOnly)
        }
    }
}

/// A read beside a running change found nothing in the data directory to answer from (no
/// version installed, no catalog kept): it waits behind the change instead.
struct NothingToReadBeside: Error {}
