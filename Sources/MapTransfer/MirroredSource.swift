package import Foundation
package import MapModel
import MapPlatform
import Synchronization

/// One site served by several mirrors. The signed catalog and the pinned manifests and
/// blobs make every mirror as trustworthy as the origin, so each file comes from whichever
/// mirror answers: a mirror that fails (refused, unreachable, stalled after its retries,
/// an HTTP error, more bytes than pinned, bytes that fail their check) hands over to the
/// next, which continues a partial file with `Range`, so finished bytes are never fetched
/// again. The mirror that last worked is asked first.
///
/// ``failingOver(_:)`` is the one place a site fails over: downloads, verified blob
/// fetches and catalog acceptance all go through it.
package final class MirroredSource: SiteSource {
    /// The mirrors, the configured first.
    private let mirrors: [any SiteSource]
    /// Called when a mirror fails and the next one is tried.
    private let onFailover: @Sendable (_ failed: String, _ reason: String, _ next: String) -> Void
    /// The mirror that last worked, shared by the copies made for each operation.
    private let preferred: Preferred

    /// The index of the mirror that last worked.
    private final class Preferred: Sendable {
        let index = Mutex(0)
    }

    /// A site served by `mirrors` (at least one).
    package convenience init(
        _ mirrors: [any SiteSource],
        onFailover: @escaping @Sendable (_ failed: String, _ reason: String, _ next: String) -> Void = { _, _, _ in }
    ) {
        self.init(mirrors, onFailover: onFailover, preferred: Preferred())
    }

    private init(
        _ mirrors: [any SiteSource], onFailover: @escaping @Sendable (_ failed: String, _ reason: String, _ next: String) -> Void,
        preferred: Preferred
    ) {
        precondition(!mirrors.isEmpty)
        self.mirrors = mirrors
        self.onFailover = onFailover
        self.preferred = preferred
    }

    /// Each mirror for the operation that `control` pauses, the mirror that last worked shared.
    package func controlled(by control: TransferControl?) -> any SiteSource {
        MirroredSource(mirrors.map { $0.controlled(by: control) }, onFailover: onFailover, preferred: preferred)
    }

    package var baseURL: URL { mirrors[preferred.index.withLock { $0 }].baseURL }

    package func download(
        _ path: String, to file: URL, limit: TransferLimit,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws(MapLoaderError) {
        do {
            try await failingOver { mirror in try await mirror.download(path, to: file, limit: limit, progress: progress) }
        } catch {
            throw MapLoaderError(error)
        }
    }

    /// Runs `body` with each mirror in turn, the one that last worked first (or the
    /// configured site first, for `.configured`), until it succeeds; that mirror is asked
    /// first next time. Errors of this device (cancelled, no space, storage, quota, a
    /// network the policy leaves out) end the walk at once: no other mirror helps with them.
    /// Throws the first mirror's error when every mirror failed.
    package func failingOver<T: Sendable>(
        from order: FailoverOrder, _ body: @Sendable (any SiteSource) async throws -> T
    ) async throws -> T {
        let start = order == .configured ? 0 : preferred.index.withLock { $0 }
        var failure: MapLoaderError?
        for step in 0..<mirrors.count {
            let index = (start + step) % mirrors.count
            do {
                let value = try await body(mirrors[index])
                preferred.index.withLock { $0 = index }
                return value
            } catch {
                let error = MapLoaderError(error)
                switch error {
                // Not the mirror's fault: the device's own state (a network the policy leaves out included).
                case .cancelled, .insufficientSpace, .storageFailed, .quotaExceeded, .networkNotAllowed: throw error
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
