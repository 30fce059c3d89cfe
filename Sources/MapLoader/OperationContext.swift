import Foundation
import MapModel
import MapStore
import MapTransfer

/// Everything one operation works with, made once when it starts (after its lock or lease
/// is taken) and passed down to all it calls: nothing of a running operation is kept on
/// the loader, and nothing is made twice (one site client serves the catalog, the
/// manifests and the blobs, so a mirror chosen for one is asked first for the next).
struct OperationContext: Sendable {
    /// Which operation this is (named in its events).
    let kind: MapLoaderOperation
    /// The data directory as this operation sees it: the live generation for a writer,
    /// which holds the write lock; the generation it pinned for a reader.
    let store: Store
    /// Where its events go.
    let hub: EventHub
    /// The site client, or why there is none (an operation that works offline needs none).
    let site: Result<SiteClient, MapLoaderError>
    /// The loader's configuration.
    let configuration: MapLoader.Configuration
    /// For a read answered beside a running change (``MapLoader``'s reads never wait): that
    /// change. Such a read works from the data directory alone.
    let besideChange: MapLoaderOperation?
    /// What the recovery that a writer runs first removed (unused generations, leftovers
    /// of interrupted operations), for a garbage collection's report.
    var recovered = CleanupReport(removed: [], freedBytes: 0)

    /// The site client, or the reason there is none as the operation's error.
    func siteClient() throws(MapLoaderError) -> SiteClient { try site.get() }

    /// How this operation accepts a catalog: under the configured trust and the data
    /// directory's saved keys, roots and serial.
    var acceptance: CatalogAcceptance { CatalogAcceptance(store: store, trust: configuration.trust) }

    /// Verified manifests by SHA-256, so an unchanged manifest is never downloaded twice.
    var manifestCache: URL { store.directory.manifestCache }

    /// Sends a progress event of this operation.
    func progress(
        _ phase: OperationPhase, bytes: Int64 = 0, total: Int64 = 0, items: Int = 0, totalItems: Int = 0,
        item: String? = nil
    ) {
        hub.progress(kind, phase, bytes: bytes, total: total, items: items, totalItems: totalItems, item: item)
    }
}
