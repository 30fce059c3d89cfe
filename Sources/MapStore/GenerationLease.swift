package import Foundation
import MapModel
import MapPlatform
import SystemPackage

/// A pin on one generation: while it is held, no writer removes `generations/<n>`, so a
/// reader sees one whole version however many updates commit meanwhile.
///
/// A lease is a file `leases/<n>.<id>.lease` holding a shared `flock(2)`. Writers remove a
/// generation only when no lease file of it is locked; a lease of a dead process is unlocked
/// and removed by the next writer, so a stale pin never keeps data forever.
///
/// Readers work where the data directory takes no writes: on a full disk or one the reader
/// may not write, the lease goes to a folder of the runtime directory named after the data
/// directory (``fallbackFolder(for:)``, which writers check too); on a read-only data
/// directory with nowhere else to write, the reader reads unpinned, since no writer can
/// remove anything there.
package final class GenerationLease: Sendable {
    /// The pinned generation's number.
    package let generation: Int
    /// `generations/<n>`, stable for the lease's life.
    package let directory: URL
    /// The lease file's final name (the lock was taken under a temporary one); `nil` when
    /// read unpinned.
    private let file: String?
    /// The shared lock; released when the lease is.
    private let lock: FileLock?

    private init(generation: Int, directory: URL, file: String?, lock: FileLock?) {
        self.generation = generation
        self.directory = directory
        self.file = file
        self.lock = lock
    }

    deinit { if let file { FileSystem.remove(file) } }

    /// Where leases go when the data directory cannot take them: a folder of the runtime
    /// directory (`$XDG_RUNTIME_DIR`, else the temporary folder) named after the user and the
    /// data directory's device and inode, so every process that reads it finds the same one.
    package static func fallbackFolder(for store: Store) -> URL? {
        guard let identity = FileStatus.of(store.root.path)?.identity else { return nil }
        let runtime =
            ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? NSTemporaryDirectory()
        return URL(fileURLWithPath: runtime)
            .appendingPathComponent("maploader-leases-\(FileSystem.userID)-\(identity.device)-\(identity.inode)")
    }

    /// Whether `error` says the folder takes no writes (read-only, full, not permitted).
    private static func cannotWrite(_ error: any Error) -> Bool {
        guard let error = error as? SystemError else { return false }
        return error.isNoSpace || error.errno == .readOnlyFileSystem || error.errno == .permissionDenied
            || error.errno == .notPermitted
    }

    /// Pins the generation `current` names; `nil` when there is none (nothing installed,
    /// or `current` names no generation: ``CurrentPointer/generation()``).
    ///
    /// The lease is locked under a temporary name and renamed into place, so a writer never
    /// sees an unlocked lease that is still being made; then `current` is read again: if a
    /// writer switched meanwhile, the pin may have come too late and is taken anew.
    package static func pinCurrent(of store: Store) throws -> GenerationLease? {
        do {
            return try pinCurrent(of: store, in: store.directory.leases)
        } catch  where cannotWrite(error) {
            if let fallback = fallbackFolder(for: store), (try? FileSystem.makeDirectories(fallback)) != nil,
                let lease = try? pinCurrent(of: store, in: fallback)
            {
                return lease
            }
            guard (error as? SystemError)?.errno == .readOnlyFileSystem else { throw error }
            // Nowhere to write a pin, and no writer can change a read-only data directory.
            return store.currentGeneration().map {
                GenerationLease(generation: $0, directory: store.directory.generation($0), file: nil, lock: nil)
            }
        }
    }

    private static func pinCurrent(of store: Store, in folder: URL) throws -> GenerationLease? {
        for _ in 0..<1_000 {
            guard let generation = store.currentGeneration() else { return nil }
            let id = "\(FileSystem.processID)-\(UUID().uuidString)"
            let temporary = folder.appendingPathComponent(".tmp-\(id)").path
            guard let lock = try FileLock.attempt(temporary, .shared) else { continue }
            let final = folder.appendingPathComponent("\(generation).\(id).lease").path
            do {
                try FileSystem.rename(temporary, final)
            } catch {
                FileSystem.remove(temporary)
                throw error
            }
            let lease = GenerationLease(
                generation: generation, directory: store.directory.generation(generation),
                file: final, lock: lock)
            if store.currentGeneration() == generation { return lease }
        }
        throw SystemError("pin", store.directory.current.path, .resourceTemporarilyUnavailable)
    }

    /// The generations pinned by a live lease; removes the lease files of dead processes.
    /// Call only while holding the data directory's write lock.
    package static func pinnedGenerations(of store: Store) -> Set<Int> {
        var pinned = Set<Int>()
        for folder in [store.directory.leases] + [fallbackFolder(for: store)].compactMap({ $0 }) {
            pinned.formUnion(pinnedGenerations(in: folder))
        }
        return pinned
    }

    private static func pinnedGenerations(in folder: URL) -> Set<Int> {
        var pinned = Set<Int>()
        let names = ((try? FileSystem.entryNames(folder.path)) ?? []).map { String(decoding: $0, as: UTF8.self) }
        for name in names {
            let path = folder.appendingPathComponent(name).path
            if name.hasPrefix(".tmp-") {
                // Being made right now, or left by a process that died making it.
                if let status = FileStatus.of(path), Date().timeIntervalSince1970 - status.modified > 60,
                    (try? FileLock.attempt(path, .exclusive)) != nil
                {
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
