import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The on-device store: immutable generations and one `current` link that names the
/// live one.
///
/// ```
/// <data-dir>/generations/<n>/<package>/<group>/…   installed trees (readers use current/…)
/// <data-dir>/generations/<n>/state.json            what generation n holds
/// <data-dir>/generations/<n>/.index/<pkg>/<group>.json   every file's path, size, SHA-256
/// <data-dir>/current -> generations/<n>            switched with one rename
/// <data-dir>/staging/  <data-dir>/downloads/        work in progress
/// <data-dir>/settings.json                          group selection, last catalog serial
/// ```
/// A change builds the next generation in `staging/`, hard-linking unchanged groups, and
/// ``GenerationBuilder/commit(_:)`` makes it current with one `rename(2)`; a crash at any
/// instant leaves the old or the new generation in force, never a mix.
public struct Store: Sendable {
    /// The data directory.
    public let root: URL

    /// A store at `root`; nothing is touched until ``open()``.
    public init(root: URL) {
        self.root = root.standardizedFileURL
    }

    var generations: URL { root.appendingPathComponent("generations") }
    var staging: URL { root.appendingPathComponent("staging") }
    /// Partial and finished downloads, named by SHA-256 so a retry resumes them.
    public var downloads: URL { root.appendingPathComponent("downloads") }
    /// The live generation, through the `current` link.
    public var current: URL { root.appendingPathComponent("current") }
    var settingsFile: URL { root.appendingPathComponent("settings.json") }

    /// Creates the folders and removes what an interrupted operation left behind.
    public func open() throws(MapLoaderError) {
        for folder in [root, generations, staging, downloads] {
            do {
                try FileSystem.makeDirectories(folder)
            } catch {
                throw .storageFailed(path: folder.path, reason: Self.reason(error))
            }
        }
        guard access(root.path, W_OK) == 0 else {
            throw .storageFailed(path: root.path, reason: "the data directory is not writable (\(String(cString: strerror(errno))))")
        }
        let live = currentGeneration()
        let fm = FileManager.default
        for name in (try? fm.contentsOfDirectory(atPath: staging.path)) ?? [] {
            try? fm.removeItem(at: staging.appendingPathComponent(name))
        }
        for name in (try? fm.contentsOfDirectory(atPath: generations.path)) ?? [] where Int(name) != live {
            try? fm.removeItem(at: generations.appendingPathComponent(name))
        }
        for name in (try? fm.contentsOfDirectory(atPath: root.path)) ?? [] where name.hasPrefix("current.") {
            try? fm.removeItem(at: root.appendingPathComponent(name))
        }
    }

    /// The number of the live generation, or `nil` before the first install.
    public func currentGeneration() -> Int? {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: current.path) else { return nil }
        return Int((target as NSString).lastPathComponent)
    }

    /// The live state; ``InstalledState/empty`` before the first install.
    public func state() throws(MapLoaderError) -> InstalledState {
        guard let generation = currentGeneration() else { return .empty }
        let file = generations.appendingPathComponent("\(generation)/state.json")
        do {
            return try JSONCoding.decode(InstalledState.self, from: Data(contentsOf: file))
        } catch {
            throw .storageFailed(path: file.path, reason: "unreadable state (\(error)); run 'maploader repair'")
        }
    }

    /// The recorded files of an installed group in the live generation.
    public func index(package: String, group: String) throws(MapLoaderError) -> [FileEntry] {
        let file = current.appendingPathComponent(Self.indexPath(package: package, group: group))
        do {
            return try JSONCoding.decode([FileEntry].self, from: Data(contentsOf: file))
        } catch {
            throw .storageFailed(path: file.path, reason: "unreadable file index (\(error))")
        }
    }

    /// The folder of an installed group in the live generation.
    public func groupDirectory(package: String, group: String) -> URL {
        current.appendingPathComponent(package).appendingPathComponent(group)
    }

    static func indexPath(package: String, group: String) -> String { ".index/\(package)/\(group).json" }

    /// The user's settings (defaults when none are saved).
    public func settings() throws(MapLoaderError) -> Settings {
        guard let data = try? Data(contentsOf: settingsFile) else { return Settings() }
        do {
            return try JSONCoding.decode(Settings.self, from: data)
        } catch {
            throw .storageFailed(path: settingsFile.path, reason: "unreadable settings (\(error)); delete the file to reset")
        }
    }

    /// Saves `settings` atomically.
    public func save(_ settings: Settings) throws(MapLoaderError) {
        try Self.writeAtomically(settingsFile) { try settings.jsonData() }
    }

    /// Starts the next generation in `staging/`.
    public func beginGeneration() throws(MapLoaderError) -> GenerationBuilder {
        let existing = ((try? FileManager.default.contentsOfDirectory(atPath: generations.path)) ?? []).compactMap { Int($0) }
        let number = max(existing.max() ?? 0, currentGeneration() ?? 0) + 1
        let directory = staging.appendingPathComponent("gen-\(number)")
        do {
            try? FileManager.default.removeItem(at: directory)
            try FileSystem.makeDirectories(directory)
        } catch {
            throw .storageFailed(path: directory.path, reason: Self.reason(error))
        }
        return GenerationBuilder(store: self, number: number, directory: directory)
    }

    /// Free bytes on the data directory's file system.
    public func availableSpace() -> Int64? { DiskSpace.available(at: root) }

    // MARK: - Helpers shared by the store's parts

    /// Writes the bytes `make` returns to a temporary sibling, fsyncs and renames it over `url`.
    static func writeAtomically(_ url: URL, _ make: () throws -> Data) throws(MapLoaderError) {
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).tmp")
        do {
            let data = try make()
            try FileSystem.write(data, to: temporary)
            try fsyncPath(temporary.path)
            guard rename(temporary.path, url.path) == 0 else { throw StorageError(path: url.path, errno: errno) }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw .storageFailed(path: url.path, reason: reason(error))
        }
    }

    /// `fsync(2)` of a file or folder by path.
    static func fsyncPath(_ path: String) throws {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw StorageError(path: path, errno: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw StorageError(path: path, errno: errno) }
    }

    static func reason(_ error: any Error) -> String {
        if let error = error as? StorageError { return String(cString: strerror(error.code)) }
        if let error = error as? CocoaError, let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError,
           underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return (error as NSError).localizedDescription
    }
}
