package import Foundation
package import MapModel
package import MapPlatform

/// The on-device store: immutable generations and one `current` pointer that names the
/// live one (``CurrentPointer``), in the data directory that ``DataDirectory`` lays out.
///
/// A change builds the next generation in `staging/`, hard-linking unchanged groups (or
/// cloning or copying them where the file system has no hard links), and
/// ``GenerationBuilder/commit(_:)`` makes it current with one `rename(2)`; a crash at any
/// instant leaves the old or the new generation in force, never a mix.
package struct Store: Sendable {
    /// The store format this build reads and writes (recorded in the marker file).
    package static let format = 1

    /// The data directory's layout.
    package let directory: DataDirectory
    /// The data directory.
    package var root: URL { directory.root }
    /// Which generation is live.
    package var current: CurrentPointer { CurrentPointer(directory) }
    /// The generation set to be read, or `nil` for the live one.
    private var chosen: URL?
    /// The installed generation that reads go to: the live one (what `current` names, for
    /// writers holding the write lock), or a pinned `generations/<n>` (for readers). A
    /// `current` that is a folder (a copied data directory) is read as it is.
    package var live: URL {
        get { chosen ?? current.generation().map(directory.generation) ?? directory.current }
        set { chosen = newValue }
    }

    /// A store at `root`; nothing is touched until ``prepare()``.
    package init(root: URL) {
        self.directory = DataDirectory(root)
    }

    /// What the data directory's file system can do for carrying files into a new version,
    /// tried once with a one-byte file in `staging/`: copy-on-write clones (btrfs, XFS with
    /// reflink, APFS), and hard links (FAT and exFAT cards have none; then every file
    /// carried over is cloned or copied, and the plan counts it). Where nothing can be
    /// written, links are assumed: the change fails on its own, whatever the plan says.
    package func fileSharing() -> (canClone: Bool, canLink: Bool) {
        let probe = directory.sharingProbe()
        guard (try? FileSystem.makeDirectories(directory.staging)) != nil, (try? FileSystem.write(Data([0]), to: probe)) != nil else {
            return (false, true)
        }
        defer {
            for suffix in ["", ".clone", ".link"] { FileSystem.remove(probe.path + suffix) }
        }
        return (FileSystem.cloneFile(probe.path, probe.path + ".clone"), (try? FileSystem.link(probe.path, probe.path + ".link")) != nil)
    }

    /// This store reading the generation `lease` pins (or the live one when `nil`).
    package func reading(_ lease: GenerationLease?) -> Store {
        var copy = self
        copy.chosen = lease?.directory
        return copy
    }

    /// Makes sure `root` is a MapLoader data directory of a format this build reads, creating
    /// it (and its marker) when it is new or empty. Removes nothing: cleaning happens only
    /// in ``recover()``, under the write lock.
    package func prepare() throws(MapLoaderError) {
        do {
            try FileSystem.makeDirectories(root)
        } catch {
            throw .storage(path: root.path, error)
        }
        if let data = try? Data(contentsOf: directory.marker) {
            struct Marker: Decodable { var format: Int }
            guard let found = try? JSONDecoder().decode(Marker.self, from: data) else {
                throw .dataDirectoryRefused(path: root.path, reason: "its marker file .maploader is unreadable; restore it or choose another folder")
            }
            guard found.format <= Self.format else {
                throw .dataDirectoryRefused(
                    path: root.path,
                    reason: "it was written by a newer MapLoader (store format \(found.format), this one reads \(Self.format)); upgrade maploader")
            }
        } else {
            let names = FileSystem.names(in: root.path)
            if let foreign = names.sorted().first(where: { name in
                !DataDirectory.ownNames.contains(name) && !DataDirectory.transientPrefixes.contains { name.hasPrefix($0) }
            }) {
                throw .dataDirectoryRefused(
                    path: root.path,
                    reason: "it is not a MapLoader data directory (it holds '\(foreign)'); choose an empty or new folder")
            }
            if let problem = FileSystem.writeProblem(root.path) {
                throw .storageFailed(path: root.path, reason: "the data directory is not writable (\(problem))")
            }
            try Self.writeAtomically(directory.marker) { Data("{\"format\":\(Self.format)}\n".utf8) }
        }
        for folder in directory.folders {
            do {
                try FileSystem.makeDirectories(folder)
            } catch {
                throw .storage(path: folder.path, error)
            }
        }
        // Maps can be downloaded again: they stay out of the device's backups.
        StandardFolders.excludeFromBackup(root)
    }

    /// Takes the data directory's write lock: one writer at a time, across processes and
    /// across loaders in one process.
    /// - Parameters:
    ///   - wait: wait for another writer to finish; `false` fails at once with ``MapLoaderError/busy(pid:)``.
    ///   - onWait: called once before waiting, with the holder's pid when known.
    package func lockForWriting(wait: Bool, onWait: (Int32?) -> Void) async throws -> FileLock {
        do {
            return try await FileLock.acquire(directory.writeLock.path, .exclusive, wait: wait, onWait: onWait)
        } catch let busy as FileLock.Busy {
            throw MapLoaderError.busy(pid: busy.holder.map(Int.init))
        }
    }

    /// Pins the live generation for reading (`nil` when nothing is installed).
    package func pinCurrent() throws -> GenerationLease? {
        try GenerationLease.pinCurrent(of: self)
    }

    /// Whether the data directory needs ``recover()`` before it can be read: `current` is a
    /// copied folder, or missing while generations exist (a crash right before a switch).
    package var needsRecovery: Bool {
        if currentIsFolder { return true }
        guard currentGeneration() == nil else { return false }
        return !((FileSystem.names(in: directory.generations.path)).compactMap { Int($0) }.isEmpty)
    }

    /// Whether `current` is a real folder rather than the pointer to a generation (a data
    /// directory copied with `cp -rL`, say): ``recover()`` turns it back into a pointer.
    package var currentIsFolder: Bool {
        FileStatus.of(directory.current.path)?.kind == .directory
    }

    /// Removes what interrupted operations left behind: staging, half-made `current` pointers,
    /// generations neither live nor pinned by a reader, and leases of dead processes; turns a
    /// copied `current` folder back into a generation; says what it removed. Call only while
    /// holding the write lock.
    @discardableResult
    package func recover() throws(MapLoaderError) -> CleanupReport {
        if currentIsFolder { try adoptCurrentFolder() }
        if currentGeneration() == nil, let newest = newestUsableGeneration() {
            // A crash between moving a generation into place and switching `current` to it
            // (an adoption, or a first install): that generation is whole, so it goes live.
            try switchCurrent(to: newest)
        }
        var tally = CleanupTally(self)
        for name in FileSystem.names(in: directory.staging.path) {
            tally.remove(directory.staging.appendingPathComponent(name))
        }
        for link in directory.strayCurrentLinks() { FileSystem.removeTree(link) }
        directory.removeOldLayoutResumeFiles()
        for number in unusedGenerations() { tally.remove(directory.generation(number)) }
        return tally.report
    }

    /// Removes every generation that is neither live nor pinned. Call only while holding the
    /// write lock.
    package func removeUnusedGenerations() {
        for number in unusedGenerations() {
            FileSystem.removeTree(directory.generation(number))
        }
    }

    /// Generations neither live nor pinned by a reader; none while nothing is live (there is
    /// nothing to compare with: ``recover()`` makes the newest usable one live first).
    /// Removes the lease files of dead processes. Call only while holding the write lock.
    package func unusedGenerations() -> [Int] {
        guard let live = currentGeneration() else { return [] }
        let pinned = GenerationLease.pinnedGenerations(of: self)
        return (FileSystem.names(in: directory.generations.path))
            .compactMap { Int($0) }.filter { $0 != live && !pinned.contains($0) }
    }

    /// The highest generation whose state reads and is consistent.
    private func newestUsableGeneration() -> Int? {
        let numbers = (FileSystem.names(in: directory.generations.path)).compactMap { Int($0) }
        return numbers.sorted(by: >).first { number in
            var candidate = self
            candidate.live = directory.generation(number)
            return (try? candidate.state()) != nil
        }
    }

    /// A `current` that is a folder becomes generation n+1 and `current` points to it again.
    /// A copy has new modification times, which the quick check would take for local
    /// changes: when every file still hashes as recorded, the state is recorded anew.
    private func adoptCurrentFolder() throws(MapLoaderError) {
        let number = nextGenerationNumber()
        let target = directory.generation(number)
        do {
            try FileSystem.rename(directory.current.path, target.path)
        } catch {
            throw .storage(path: directory.current.path, error)
        }
        var adopted = self
        adopted.live = target
        if var state = try? adopted.state() {
            state.generation = number
            if StoreCheck.full(adopted, state).isEmpty { state.committed = Date() }
            try Self.writeAtomically(DataDirectory.stateFile(in: target)) { try state.jsonData() }
        }
        try switchCurrent(to: number)
    }

    /// Points `current` at generation `number` with one rename, and flushes the folder.
    package func switchCurrent(to number: Int) throws(MapLoaderError) {
        do {
            try current.switchTo(number)
        } catch {
            throw .storage(path: directory.current.path, error)
        }
    }

    /// One more than every generation on disk. Call only while holding the write lock.
    package func nextGenerationNumber() -> Int {
        let existing = (FileSystem.names(in: directory.generations.path)).compactMap { Int($0) }
        return max(existing.max() ?? 0, currentGeneration() ?? 0) + 1
    }

    /// The number of the live generation, or `nil` before the first install.
    package func currentGeneration() -> Int? { current.generation() }

    /// The installed state of the generation read (``InstalledState/empty`` before the first
    /// install). A state that is unreadable, of a newer format, or inconsistent is an error
    /// that ``MapLoader/repair()`` mends.
    package func state() throws(MapLoaderError) -> InstalledState {
        let file = DataDirectory.stateFile(in: live)
        guard FileStatus.of(live.path) != nil else { return .empty }
        let state: InstalledState
        do {
            state = try JSONCoding.decode(InstalledState.self, from: Data(contentsOf: file))
        } catch {
            throw .storageFailed(path: file.path, reason: "unreadable state (\(error)); repair the data directory")
        }
        if let problem = state.problem {
            throw .storageFailed(path: file.path, reason: "\(problem); repair the data directory")
        }
        return state
    }

    /// The recorded files of an installed group in the generation read.
    package func index(package: String, group: String) throws(MapLoaderError) -> [FileEntry] {
        let file = live.appendingPathComponent(DataDirectory.indexPath(package: package, group: group))
        do {
            return try JSONCoding.decode([FileEntry].self, from: Data(contentsOf: file))
        } catch {
            throw .storageFailed(path: file.path, reason: "unreadable file index (\(error))")
        }
    }

    /// The folder of an installed group in the generation read.
    package func groupDirectory(package: String, group: String) -> URL {
        live.appendingPathComponent(package).appendingPathComponent(group)
    }

    /// The user's settings (defaults when none are saved).
    package func settings() throws(MapLoaderError) -> Settings {
        guard let data = try? Data(contentsOf: directory.settingsFile) else { return Settings() }
        do {
            return try JSONCoding.decode(Settings.self, from: data)
        } catch {
            throw .storageFailed(path: directory.settingsFile.path, reason: "unreadable settings (\(error)); delete the file to reset")
        }
    }

    /// Reads, changes and saves the settings under the settings lock, so two processes that
    /// both change them (a reader recording a catalog serial, a writer a selection) never
    /// lose each other's change.
    package func updateSettings(_ change: (inout Settings) throws -> Void) async throws -> Settings {
        let lock = try await FileLock.acquire(directory.settingsLock.path, .exclusive, wait: true) { _ in }
        defer { withExtendedLifetime(lock) {} }
        var settings = try self.settings()
        let before = settings
        try change(&settings)
        if settings != before { try save(settings) }
        return settings
    }

    /// Saves `settings` atomically.
    package func save(_ settings: Settings) throws(MapLoaderError) {
        try Self.writeAtomically(directory.settingsFile) { try settings.jsonData() }
    }

    /// Starts the next generation in `staging/`. Call only while holding the write lock.
    package func beginGeneration() throws(MapLoaderError) -> GenerationBuilder {
        let number = nextGenerationNumber()
        let folder = directory.stagedGeneration(number)
        do {
            FileSystem.removeTree(folder)
            try FileSystem.makeDirectories(folder)
        } catch {
            throw .storage(path: folder.path, error)
        }
        return GenerationBuilder(store: self, number: number, directory: folder)
    }

    /// Free bytes on the data directory's file system.
    package func availableSpace() -> Int64? { FileSystem.availableSpace(at: root.path) }

    // MARK: - Helpers shared by the store's parts

    /// Writes the bytes `make` returns to a temporary sibling, fsyncs and renames it over `url`.
    package static func writeAtomically(_ url: URL, _ make: () throws -> Data) throws(MapLoaderError) {
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(FileSystem.processID)-\(UUID().uuidString).tmp")
        do {
            let data = try make()
            try FileSystem.write(data, to: temporary)
            try FileSystem.sync(temporary.path)
            try FileSystem.rename(temporary.path, url.path)
        } catch {
            FileSystem.removeTree(temporary)
            throw .storage(path: url.path, error)
        }
    }
}
