import Foundation
import MapModel
import MapPlatform
import MapStore

extension MapLoader {
    /// What each installed package and data group takes on disk, and the whole data
    /// directory (hard-linked files counted once). Works offline; reads one whole version.
    public func diskUsage() async throws(MapLoaderError) -> DiskUsage {
        try await run(.list) { loader in
            let store = loader.store
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
        try await run(.collectGarbage) { loader in
            let store = loader.store
            let keep = try store.state().manifest
            return try await offActor { store.collectGarbage(keepManifest: keep, grace: 300) }
        }
    }
}
