import Foundation
import MapModel
import MapPlatform
import Synchronization

/// One site served by several mirrors. The signed catalog and the pinned manifests and
/// blobs make every mirror as trustworthy as the origin, so each file comes from whichever
/// mirror answers: a mirror that fails (refused, unreachable, stalled after its retries,
/// an HTTP error, more bytes than pinned) hands over to the next, which continues the
/// partial file with `Range`, so finished bytes are never fetched again. The mirror that
/// last worked is asked first.
package final class MirroredSource: SiteSource {
    /// The mirrors, the configured first.
    package let mirrors: [any SiteSource]
    /// Called when a mirror fails and the next one is tried.
    private let onFailover: @Sendable (_ failed: String, _ reason: String, _ next: String) -> Void
    private let preferred = Mutex(0)

    /// A site served by `mirrors` (at least one).
    package init(
        _ mirrors: [any SiteSource],
        onFailover: @escaping @Sendable (_ failed: String, _ reason: String, _ next: String) -> Void = { _, _, _ in }
    ) {
        precondition(!mirrors.isEmpty)
        self.mirrors = mirrors
        self.onFailover = onFailover
    }

    package var baseURL: URL { mirrors[preferred.withLock { $0 }].baseURL }

    /// The mirror the last finished download came from (asked first next time).
    package var lastUsed: any SiteSource { mirrors[preferred.withLock { $0 }] }

    package func download(
        _ path: String, to file: URL, limit: TransferLimit,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws(MapLoaderError) {
        let start = preferred.withLock { $0 }
        var failure: MapLoaderError?
        for step in 0..<mirrors.count {
            let index = (start + step) % mirrors.count
            do {
                try await mirrors[index].download(path, to: file, limit: limit, progress: progress)
                preferred.withLock { $0 = index }
                return
            } catch {
                // Problems of this device are not the mirror's: no other mirror helps.
                switch error {
                case .cancelled, .insufficientSpace, .storageFailed, .quotaExceeded: throw error
                default: break
                }
                failure = failure ?? error
                if step + 1 < mirrors.count {
                    let next = mirrors[(index + 1) % mirrors.count].baseURL.absoluteString
                    onFailover(mirrors[index].baseURL.absoluteString, error.description, next)
                }
            }
        }
        throw failure!
    }

    package func tree(_ treeHash: String) -> URL? {
        mirrors.lazy.compactMap { $0.tree(treeHash) }.first
    }
}
