import Foundation
import MapModel
import MapPlatform
import MapStore
import MapTransfer

extension MapLoader {
    /// What each installed package and data group takes on disk, and the whole data
    /// directory (hard-linked files counted once). Works offline; reads one whole version.
    public func diskUsage() async throws(MapLoaderError) -> DiskUsage {
        try await enqueue(.list) { _, operation in
            let store = operation.store
            let state = try store.state()
            return try await offActor { store.usage(of: state) }
        }
    }

    /// Frees what no operation needs: versions that no reader holds any more, leftovers of
    /// interrupted operations, partial downloads (kept otherwise so that a retry resumes
    /// them) untouched for five minutes, and cached manifests of versions no longer
    /// installed. Installed maps are never touched. Works offline.
    @discardableResult
    public func collectGarbage() async throws(MapLoaderError) -> CleanupReport {
        try await enqueue(.collectGarbage) { _, operation in
            let store = operation.store
            let cache = operation.manifestCache
            return try await offActor {
                let keep = try store.state().manifest.map { SiteClient.cacheEntries(ofManifest: $0, in: cache) } ?? []
                // The recovery this writer ran first may have removed generations a reader
                // released since: they count as this collection's.
                return operation.recovered.adding(store.collectGarbage(keepManifests: keep, grace: 300))
            }
        }
    }
}

extension MapLoader {
    /// Saves the most bytes the data directory may hold (`nil` removes the limit): every
    /// process using the directory then refuses an install or update whose peak would pass
    /// it. ``Configuration/quota`` overrides the saved value for this loader. Works offline.
    public func setQuota(_ bytes: Int64?) async throws(MapLoaderError) {
        if let bytes, bytes <= 0 { throw .invalidParameters("a quota must be more than 0 bytes") }
        try await enqueue(.configure) { _, operation in
            _ = try await operation.store.updateSettings { $0.quota = bytes }
        }
    }

    /// The quota in force: ``Configuration/quota``, else the saved one; `nil` for none.
    public func quota() async throws(MapLoaderError) -> Int64? {
        try await enqueue(.list) { loader, operation in try loader.configuration.quota ?? operation.store.settings().quota }
    }
}
