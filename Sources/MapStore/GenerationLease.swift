import Foundation
import MapModel
import MapPlatform

/// A pin on one generation: while it is held, no writer removes `generations/<n>`, so a
/// reader sees one whole version however many updates commit meanwhile.
///
/// A lease is a file `leases/<n>.<id>.lease` holding a shared `flock(2)`. Writers remove a
/// generation only when no lease file of it is locked; a lease of a dead process is unlocked
/// and removed by the next writer, so a stale pin never keeps data forever.
package final class GenerationLease: Sendable {
    /// The pinned generation's number.
    package let generation: Int
    /// `generations/<n>`, stable for the lease's life.
    package let directory: URL
    /// The lease file's final name (the lock was taken under a temporary one).
    private let file: String
    /// The shared lock; released when the lease is.
    private let lock: FileLock

    private init(generation: Int, directory: URL, file: String, lock: FileLock) {
        self.generation = generation
        self.directory = directory
        self.file = file
        self.lock = lock
    }

    deinit { FileSystem.remove(file) }

    /// Pins the generation `current` names; `nil` when there is none (nothing installed,
    /// or `current` is not a link).
    ///
    /// The lease is locked under a temporary name and renamed into place, so a writer never
    /// sees an unlocked lease that is still being made; then `current` is read again: if a
    /// writer switched meanwhile, the pin may have come too late and is taken anew.
    package static func pinCurrent(of store: Store) throws -> GenerationLease? {
        for _ in 0..<1_000 {
            guard let generation = store.currentGeneration() else { return nil }
            let id = "\(FileSystem.processID)-\(UUID().uuidString)"
            let temporary = store.leases.appendingPathComponent(".tmp-\(id)").path
            guard let lock = try FileLock.attempt(temporary, .shared) else { continue }
            let final = store.leases.appendingPathComponent("\(generation).\(id).lease").path
            do {
                try FileSystem.rename(temporary, final)
            } catch {
                FileSystem.remove(temporary)
                throw error
            }
            let lease = GenerationLease(generation: generation, directory: store.generationDirectory(generation),
                                        file: final, lock: lock)
            if store.currentGeneration() == generation { return lease }
        }
        throw SystemError("pin", store.current.path, .resourceTemporarilyUnavailable)
    }

    /// The generations pinned by a live lease; removes the lease files of dead processes.
    /// Call only while holding the data directory's write lock.
    package static func pinnedGenerations(of store: Store) -> Set<Int> {
        var pinned = Set<Int>()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: store.leases.path)) ?? []
        for name in names {
            let path = store.leases.appendingPathComponent(name).path
            if name.hasPrefix(".tmp-") {
                // Being made right now, or left by a process that died making it.
                if let status = FileStatus.of(path), Date().timeIntervalSince1970 - status.modified > 60,
                   (try? FileLock.attempt(path, .exclusive)) != nil {
                    FileSystem.remove(path)
                }
                continue
            }
            guard name.hasSuffix(".lease"), let generation = Int(name.split(separator: ".")[0]) else { continue }
            if (try? FileLock.attempt(path, .exclusive)) != nil {
                FileSystem.remove(path)  // its holder is gone
            } else {
                pinned.insert(generation)
            }
        }
        return pinned
    }
}
