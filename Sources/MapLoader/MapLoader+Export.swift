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
            let settings = try operation.store.settings()
            let keys =
                settings.trustedRoot?.catalogPublicKeys(at: Date())
                ?? (settings.trustedKeys ?? []).compactMap(PublicKey.init(base64:)) + loader.configuration.trust.keys
            let bundle = try ExportBundle.gather(version: version, manifestSHA: manifestSHA, operation: operation, keys: keys)
            let leaves = try bundle.leaves(ids, installed: state)
            let store = operation.store
            let groups = leaves.sorted().flatMap { leaf in (state.packages[leaf] ?? [:]).sorted { $0.key < $1.key }.map { (leaf, $0.key, $0.value) } }
            let hub = loader.hub
            let bytes: Int64 = try await offActor {
                do {
                    return try Self.writeExport(groups, of: store, bundle: bundle, into: destination, hub: hub)
                } catch {
                    // The folder was new or empty: what this export wrote goes, so a retry finds it empty.
                    for name in FileSystem.names(in: destination.path) { FileSystem.removeTree(destination.appendingPathComponent(name)) }
                    throw error
                }
            }
            return ExportReport(folder: destination.path, packages: leaves.sorted(), version: version, groups: groups.count, bytes: bytes)
        }
    }

    /// Copies each installed group's tree into `destination` and writes the site's files
    /// (on the blocking threads); the bytes of maps written.
    private static func writeExport(
        _ groups: [(String, String, InstalledGroup)], of store: Store, bundle: ExportBundle, into destination: URL, hub: EventHub
    ) throws -> Int64 {
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
        try bundle.write(into: destination)
        return total
    }
}
