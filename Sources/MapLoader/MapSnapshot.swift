public import Foundation
import MapDelta
import MapModel
import MapPlanner
import MapPlatform
import MapStore
import MapTransfer
import Synchronization

extension MapLoader {
    /// One installed map version, pinned for reading.
    ///
    /// While a snapshot is open, its files stay exactly as they were when it was opened, even
    /// if updates commit meanwhile (in this process or another): the generation it names is
    /// kept until the last snapshot of it is released. Release it when done reading; it is
    /// also released when the object goes away, and when its process ends (a snapshot of a
    /// process that was killed never keeps data forever).
    ///
    /// ```swift
    /// let snapshot = try loader.openSnapshot()
    /// defer { snapshot.release() }
    /// let tiles = snapshot.url(package: "de-berlin", group: "base")
    /// ```
    public final class Snapshot: Sendable {
        /// The pinned map version (`nil` when nothing is installed).
        public let version: String?
        /// Installed groups by package id.
        public let packages: [String: [String]]
        /// The folder holding the pinned files: `<package>/<group>/<path>` below it.
        public let root: URL
        /// The pin; `nil` once released. A lock guards it because `release()` may be called
        /// from any thread.
        private let lease: Mutex<GenerationLease?>

        init(lease: GenerationLease?, state: InstalledState, root: URL) {
            self.lease = Mutex(lease)
            self.version = state.version
            self.packages = state.packages.mapValues { $0.keys.sorted() }
            self.root = root
        }

        /// The folder of one installed group's files.
        public func url(package: String, group: String) -> URL {
            root.appendingPathComponent(package, isDirectory: true).appendingPathComponent(group, isDirectory: true)
        }

        /// Lets go of the pinned version; the next change of the data directory may remove it.
        /// Calling it again does nothing.
        public func release() {
            let released = lease.withLock { lease in
                defer { lease = nil }
                return lease
            }
            withExtendedLifetime(released) {}
        }
    }
}

/// The name the package uses for ``MapLoader/Snapshot``.
package typealias MapSnapshot = MapLoader.Snapshot

extension MapLoader {
    /// Pins the installed maps for reading: the returned snapshot's files do not change
    /// until it is released, whatever updates commit meanwhile. Does not wait for a running
    /// operation.
    ///
    /// It reads a few small files on the calling thread, except once after a data directory
    /// was copied (a `current` folder instead of the pointer): then it first adopts that
    /// folder, which hashes every file in it. From the main thread, prefer
    /// ``openSnapshotInBackground()``.
    public nonisolated func openSnapshot() throws(MapLoaderError) -> MapLoader.Snapshot {
        let store = Store(root: configuration.dataDirectory)
        try store.prepare()
        if store.needsRecovery {
            // A copied data directory: adopt its `current` folder first (as any change would),
            // so the snapshot pins a generation no writer renames away.
            do {
                guard let lock = try FileLock.attempt(store.directory.writeLock.path, .exclusive) else {
                    throw MapLoaderError.busy(pid: FileLock.holderPID(store.directory.writeLock.path).map(Int.init))
                }
                _ = try withExtendedLifetime(lock) { try store.recover() }
            } catch {
                throw MapLoaderError(error)
            }
        }
        let lease: GenerationLease?
        do {
            lease = try store.pinCurrent()
        } catch {
            throw MapLoaderError(error)
        }
        let pinned = store.reading(lease)
        return MapSnapshot(lease: lease, state: try pinned.state(), root: pinned.live)
    }

    /// ``openSnapshot()`` on the blocking threads, never the caller's: for a caller on the
    /// main actor, which must not wait for a copied data directory's adoption.
    public nonisolated func openSnapshotInBackground() async throws(MapLoaderError) -> MapLoader.Snapshot {
        do {
            return try await offActor { try self.openSnapshot() }
        } catch {
            throw MapLoaderError(error)
        }
    }
}
