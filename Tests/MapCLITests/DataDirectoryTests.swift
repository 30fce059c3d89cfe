import Foundation
import ManifestServer
import MapTestSupport
import Synchronization
import Testing

@testable import MapLoader

/// One data directory, many loaders and processes: the write lock, pinned snapshots, the
/// marker, and recovery from copied or damaged directories.
@Suite struct DataDirectoryTests {
    /// Whether `events` holds a download progress event (the operation holds its lock by then).
    static func downloading(_ log: EventLog) async -> Bool {
        await log.events.contains { if case .progress(let p) = $0 { p.phase == .download } else { false } }
    }

    @Test func twoLoadersOnOneDirectoryTakeTurns() async throws {
        let site = try TestSite()
        let data = site.dir.path("shared")
        // The first install stops at its first download, holding the write lock.
        let gate = Gate(phase: .download)
        let first = site.loader(dataDirectory: data)
        await first.setSynchronousDelegate(gate)
        let install = Task { try await first.install(["germany"]) }
        await gate.waitUntilReached()

        var impatient = site.loader(dataDirectory: data).configuration
        impatient.waitForLock = false
        await #expect(throws: MapLoaderError.busy(pid: Int(getpid()))) {
            try await MapLoader(configuration: impatient).install(["ch"])
        }
        // Two loaders of one process: the message names no other program.
        #expect(MapLoaderError.busy(pid: Int(getpid())).description.hasPrefix("another loader in this process"))
        #expect(MapLoaderError.busy(pid: 1).description.hasPrefix("another maploader (pid 1)"))

        let second = site.loader(dataDirectory: data)
        let secondLog = EventLog()
        let secondEvents = second.events()
        let secondCollector = Task { for await event in secondEvents { await secondLog.append(event) } }
        let secondInstall = Task { try await second.install(["ch"]) }
        // The second one waits (bounded only so a missing event fails instead of hanging).
        var polls = 0
        while await !secondLog.events.contains(.waitingForLock(pid: Int(getpid()))), polls < 3_000 {
            try await Task.sleep(for: .milliseconds(20))
            polls += 1
        }
        #expect(await secondLog.events.contains(.waitingForLock(pid: Int(getpid()))))
        #expect(await !secondLog.events.contains(.installed(["ch"])), "the second install waited for the first")
        gate.release.signal()
        _ = try await install.value
        _ = try await secondInstall.value
        second.closeEventStreams()
        await secondCollector.value

        // Both installs are in: the second one saw the first one's result.
        let installed = try await second.packageTree().packages.filter { $0.state == .installed && $0.isLeaf }.map(\.id)
        #expect(Set(installed) == ["de-berlin", "de-hamburg", "ch"])
        #expect(try await second.verify().problems.isEmpty)
    }

    /// Each reader runs while an update is in the middle of its download: once the update's
    /// first patch has begun to arrive (the server sends 3 kB/s), the update process is
    /// stopped (SIGSTOP) for as long as the reader runs, then continued, so the two overlap
    /// however busy the machine; the test checks the update was still there when the
    /// reader finished, and that both then succeed.
    @Test func readersDuringAnUpdateNeverBreakIt() async throws {
        let site = try TestSite(revisions: [1], faults: FaultPlan(bytesPerSecond: 3_000))
        let fast = ManifestServer(root: site.site)
        let fastURL = "http://127.0.0.1:\(try fast.start())"
        defer { fast.stop() }
        func quick(_ arguments: [String], _ data: URL) -> [String] {
            arguments + ["--server", fastURL, "--data-dir", data.path, "--trust-key", site.publicKey.base64]
        }
        let template = site.dir.path("template")
        #expect(try await CLI.run(quick(["install", "germany"], template)).status == 0)
        try site.publish(2)
        let reference = site.dir.path("reference")
        try FileManager.default.copyItem(at: template, to: reference)
        #expect(try await CLI.run(quick(["update"], reference)).status == 0)
        let new = try CrashTests.installed(reference)
        for (round, reader) in ["list", "verify", "check-update", "list"].enumerated() {
            let data = site.dir.path("round-\(round)")
            try FileManager.default.copyItem(at: template, to: data)
            // A long stall limit: the update is stopped while the reader runs, and the throttled
            // server lives in this busy test process; what is tested is that no reader breaks it.
            let update = try CLI.start(["update", "--timeout", "600"] + CLI.client(site, data))
            let downloads = data.appendingPathComponent("downloads")
            // Stopped by the thread that sees the first patch arrive, at once.
            let stopped = try await RawThread.value { () -> Bool in
                while update.0.isRunning {
                    if FileSystem.names(in: downloads.path).contains(where: { $0.count == 64 }) {
                        return kill(update.0.processIdentifier, SIGSTOP) == 0
                    }
                    usleep(500)
                }
                return false
            }
            let read = try await CLI.run([reader] + CLI.client(site, data))
            let overlapped = stopped && update.0.isRunning
            if stopped { kill(update.0.processIdentifier, SIGCONT) }
            let updated = try CLI.finish(update)
            #expect(overlapped, "round \(round): the update had finished before \(reader) did")
            #expect(updated.status == 0, "round \(round): update failed: \(updated.stderr)")
            #expect([0, 3].contains(read.status), "round \(round): \(reader) failed: \(read.stderr)")
            #expect(try await CLI.run(["verify"], site: site, data: data).status == 0, "round \(round)")
            #expect(try CrashTests.installed(data) == new, "round \(round)")
        }
    }

    @Test func twoInstallProcessesAtOnceBothLand() throws {
        let site = try TestSite()
        for round in 0..<3 {
            let data = site.dir.path("both-\(round)")
            let a = try CLI.start(["install", "de-berlin"] + CLI.client(site, data))
            let b = try CLI.start(["install", "ch"] + CLI.client(site, data))
            let (first, second) = (try CLI.finish(a), try CLI.finish(b))
            #expect(first.status == 0, "round \(round): \(first.stderr)")
            #expect(second.status == 0, "round \(round): \(second.stderr)")
            let listed = try CLI.run(["list", "--installed", "--json"], site: site, data: data)
            #expect(listed.stdout.contains("\"de-berlin\"") && listed.stdout.contains("\"ch\""), "round \(round)")
            #expect(try CLI.run(["verify"], site: site, data: data).status == 0)
        }
    }

    /// Blocks an operation on its first progress event of `phase` until released.
    /// Holds the operation on the reporting thread at its first progress event of `phase`
    /// (a synchronous delegate: ``MapLoader/setSynchronousDelegate(_:)``) until released.
    final class Gate: MapLoaderDelegate, Sendable {
        let phase: OperationPhase
        let reached = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        private let opened = Mutex(false)
        init(phase: OperationPhase) { self.phase = phase }
        func mapLoader(_ loader: MapLoader, didReceive event: MapLoaderEvent) {
            guard case .progress(let progress) = event, progress.phase == phase else { return }
            let first = opened.withLock { opened in
                defer { opened = true }
                return !opened
            }
            guard first else { return }
            reached.signal()
            release.wait()
        }

        /// Waits, off Swift's pool, until the operation reached the gate.
        func waitUntilReached() async {
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    self.reached.wait()
                    continuation.resume()
                }
            }
        }
    }

    @Test func aReadingOperationKeepsItsVersionWhileAnUpdateCommits() async throws {
        let site = try TestSite(revisions: [1])
        let data = site.dir.path("data")
        try await site.loader(dataDirectory: data).install(["germany"])
        try site.publish(2)
        // The reader stops inside verify, having pinned v1's generation.
        let gate = Gate(phase: .verify)
        let reader = site.loader(dataDirectory: data)
        await reader.setSynchronousDelegate(gate)
        let verifying = Task { try await reader.verify() }
        await gate.waitUntilReached()
        // Meanwhile a writer commits v2; the pinned generation must stay.
        try await site.loader(dataDirectory: data).performUpdate()
        let generations = data.appendingPathComponent("generations")
        #expect(try FileManager.default.contentsOfDirectory(atPath: generations.path).count == 2)
        gate.release.signal()
        let report = try await verifying.value
        #expect(report.problems.isEmpty, "the reader saw one whole version: \(report.problems)")
        // Released, the next change removes it.
        try await site.loader(dataDirectory: data).selectDataGroup("transit")
        #expect(try FileManager.default.contentsOfDirectory(atPath: generations.path).count == 1)
    }

    @Test func crashBetweenMovingAGenerationAndSwitchingToItIsRecoveredSimulated() async throws {
        // Simulated: `current` removed as a kill between the two renames would leave it
        // (the window is two system calls wide, too narrow to hit with a real kill).
        let site = try TestSite()
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        try await loader.install(["germany"])
        let before = try CrashTests.installed(data)
        try FileManager.default.removeItem(at: data.appendingPathComponent("current"))
        let tree = try await loader.packageTree()
        #expect(tree.packages.first { $0.id == "germany" }?.state == .installed)
        #expect(try CrashTests.installed(data) == before)
        try await loader.install(["ch"])
        #expect(try await loader.verify().problems.isEmpty)
    }

    @Test func snapshotKeepsItsVersionAcrossUpdates() async throws {
        let site = try TestSite(revisions: [1])
        let loader = site.loader()
        try await loader.install(["de-berlin"])
        let snapshot = try loader.openSnapshot()
        #expect(snapshot.version == "v1")
        #expect(snapshot.packages["de-berlin"] == ["base", "poi"])
        let v1 = try MapTestSupport.snapshot(site.release(1, "de-berlin", "base"))
        try site.publish(2)
        try site.publish(3)
        try await loader.performUpdate()

        // Two updates later the pinned files are still v1, byte for byte; current is v3.
        #expect(try MapTestSupport.snapshot(snapshot.url(package: "de-berlin", group: "base")) == v1)
        #expect(
            try MapTestSupport.snapshot(loader.currentFolder.appendingPathComponent("de-berlin/base"))
                == MapTestSupport.snapshot(site.release(3, "de-berlin", "base")))
        let generations = loader.configuration.dataDirectory.appendingPathComponent("generations")
        #expect(try FileManager.default.contentsOfDirectory(atPath: generations.path).count == 2)

        // Released, the next change removes it.
        snapshot.release()
        snapshot.release()
        try await loader.selectDataGroup("transit")
        #expect(try FileManager.default.contentsOfDirectory(atPath: generations.path).count == 1)
        #expect(!FileManager.default.fileExists(atPath: snapshot.root.path))
    }

    @Test func pinOfAKilledProcessDoesNotKeepDataForever() throws {
        let site = try TestSite(revisions: [1])
        let data = site.dir.path("data")
        #expect(try CLI.run(["install", "de-berlin"], site: site, data: data).status == 0)
        let pidFile = site.dir.path("pinned.pid")
        let pin = try CLI.start(["pin", "--data-dir", data.path, "--", "sh", "-c", "echo $$ > \(pidFile.path); exec sleep 60"])
        defer { kill(pin.0.processIdentifier, SIGKILL) }
        while pin.0.isRunning, !FileManager.default.fileExists(atPath: pidFile.path) { usleep(10_000) }
        try site.publish(2)
        #expect(try CLI.run(["update"], site: site, data: data).status == 0)
        let generations = data.appendingPathComponent("generations")
        #expect(try FileManager.default.contentsOfDirectory(atPath: generations.path).count == 2, "the pinned v1 is kept")

        // SIGKILL the pinning maploader (and the command it ran): its pin dies with it.
        kill(pin.0.processIdentifier, SIGKILL)
        pin.0.waitUntilExit()
        if let child = Int32((try? String(contentsOf: pidFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") {
            kill(child, SIGKILL)
        }
        #expect(try CLI.run(["groups", "select", "transit"], site: site, data: data).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: generations.path).count == 1)
        let leases = try FileManager.default.contentsOfDirectory(atPath: data.appendingPathComponent("leases").path)
        #expect(leases.isEmpty, "stale lease files are removed: \(leases)")
    }

    @Test func pinRunsTheCommandOnTheSnapshotAndPassesItsExitCode() throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        #expect(try CLI.run(["install", "de-berlin"], site: site, data: data).status == 0)
        let listed = try CLI.run(["pin", "--data-dir", data.path, "--", "ls", "{}/de-berlin/base"])
        #expect(listed.status == 0)
        #expect(listed.stdout.split(separator: "\n").sorted() == ["meta.json", "roads.bin", "tiles"])
        let failed = try CLI.run(["pin", "--data-dir", data.path, "--", "sh", "-c", "test -d \"$MAPLOADER_SNAPSHOT/de-berlin\" && exit 7"])
        #expect(failed.status == 7)
    }

    @Test func aFolderThatIsNotADataDirectoryIsRefusedAndLeftAlone() async throws {
        let site = try TestSite()
        let folder = site.dir.path("documents")
        let files = ["photos/cat.jpg", "staging/draft.txt", "notes.txt"]
        for file in files {
            let url = folder.appendingPathComponent(file)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data("keep me".utf8).write(to: url)
        }
        let before = try snapshot(folder)
        let loader = site.loader(dataDirectory: folder)
        for attempt in 0..<2 {
            do {
                if attempt == 0 { _ = try await loader.packageTree() } else { try await loader.install(["ch"]) }
                Issue.record("a foreign folder was used as a data directory")
            } catch {
                guard case .dataDirectoryRefused(_, let reason) = error else {
                    Issue.record("\(error)")
                    continue
                }
                #expect(reason.contains("not a MapLoader data directory"))
            }
        }
        #expect(try snapshot(folder) == before)
        let result = try await CLI.run(["list"], site: site, data: folder)
        #expect(result.status == 1)
        #expect(result.stderr.contains("not a MapLoader data directory"))
        #expect(try snapshot(folder) == before)
    }

    @Test func aDataDirectoryOfANewerFormatIsRefused() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        try await loader.install(["ch"])
        try Data("{\"format\":99}".utf8).write(to: data.appendingPathComponent(".maploader"))
        await #expect {
            try await loader.install(["de-berlin"])
        } throws: { error in
            guard case MapLoaderError.dataDirectoryRefused(_, let reason) = error else { return false }
            return reason.contains("newer MapLoader")
        }
        #expect(FileManager.default.fileExists(atPath: data.appendingPathComponent("current/ch/base").path))
    }

    @Test func anEmptyDataDirectoryArgumentIsAUsageError() throws {
        let site = try TestSite()
        let result = try CLI.run(["list", "--server", site.url, "--data-dir", ""])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--data-dir is empty"))
        let fromEnvironment = try CLI.run(["list", "--server", site.url], environment: ["MAPLOADER_DATA_DIR": ""])
        #expect(fromEnvironment.status == 64)
    }

    @Test func aSecondWriterWaitsOrFailsWithItsOwnExitCode() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        #expect(try await CLI.run(["install", "ch"], site: site, data: data).status == 0)
        // This process holds the write lock, as another maploader would.
        var lock: FileLock? = try FileLock.attempt(DataDirectory(data).writeLock.path, .exclusive)
        #expect(lock != nil)
        let refused = try await CLI.run(["install", "de-berlin", "--no-wait"], site: site, data: data)
        #expect(refused.status == 10)
        #expect(refused.stderr.contains("pid \(getpid())"))

        let waiting = try CLI.start(["install", "de-berlin"] + CLI.client(site, data))
        // (The bound only keeps a missing message from hanging the suite; the expectation
        // below then fails.)
        var polls = 0
        while waiting.0.isRunning, polls < 3_000,
            !((try? String(contentsOf: waiting.errors, encoding: .utf8)) ?? "").contains("waiting for another maploader")
        {
            try await Task.sleep(for: .milliseconds(20))
            polls += 1
        }
        #expect(waiting.0.isRunning)
        withExtendedLifetime(lock) { lock = nil }
        let done = try CLI.finish(waiting)
        #expect(done.status == 0, "\(done.stderr)")
        #expect(done.stderr.contains("waiting for another maploader (pid \(getpid())) to finish"))
        #expect(FileManager.default.fileExists(atPath: data.appendingPathComponent("current/de-berlin/base").path))
    }

    @Test func aCopiedDataDirectoryKeepsItsMaps() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        try await site.loader(dataDirectory: data).install(["germany"])
        // `cp -rL` a second later: `current` becomes a folder, every file gets a new mtime.
        try await Task.sleep(for: .milliseconds(1_100))
        let copy = site.dir.path("copy")
        let cp = Process()
        cp.executableURL = URL(fileURLWithPath: "/bin/cp")
        cp.arguments = ["-rL", data.path, copy.path]
        try cp.run()
        cp.waitUntilExit()
        let loader = site.loader(dataDirectory: copy)
        // The first snapshot adopts the copied folder (hashing its files), off the caller's thread.
        let pinned = try await loader.openSnapshotInBackground()
        #expect(try snapshot(pinned.url(package: "de-berlin", group: "base")) == snapshot(site.release(1, "de-berlin", "base")))
        pinned.release()
        let tree = try await loader.packageTree()
        #expect(tree.packages.first { $0.id == "germany" }?.state == .installed)
        try await loader.install(["ch"])
        #expect(try await loader.verify().problems.isEmpty)
        let attributes = try FileManager.default.attributesOfItem(atPath: copy.appendingPathComponent("current").path)
        #expect(attributes[.type] as? FileAttributeType == .typeSymbolicLink)
        #expect(try snapshot(copy.appendingPathComponent("current/de-berlin/base")) == snapshot(site.release(1, "de-berlin", "base")))
    }

    /// A data directory copied off an exFAT card, where `current` is a file naming the live
    /// generation: read, pinned and changed as it is on a file system with links, the next
    /// change makes `current` a link again; a pointer file that names no generation is
    /// mended from the newest whole generation.
    @Test func aPointerFileFromACardIsReadAndSwitchedLikeALink() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        try await site.loader(dataDirectory: data).install(["germany"])
        let current = data.appendingPathComponent("current")
        let target = try FileManager.default.destinationOfSymbolicLink(atPath: current.path)
        try FileManager.default.removeItem(at: current)
        try Data((target + "\n").utf8).write(to: current)

        let loader = site.loader(dataDirectory: data)
        let tree = try await loader.packageTree()
        #expect(tree.packages.first { $0.id == "germany" }?.state == .installed)
        let snapshot = try loader.openSnapshot()
        #expect(snapshot.root.lastPathComponent == (target as NSString).lastPathComponent)
        #expect(
            try MapTestSupport.snapshot(snapshot.url(package: "de-berlin", group: "base"))
                == MapTestSupport.snapshot(site.release(1, "de-berlin", "base")))
        snapshot.release()
        #expect(try await loader.verify().problems.isEmpty)
        #expect(FileStatusKind.of(current) == .file, "read as it is: no recovery was needed")
        try await loader.install(["ch"])
        #expect(FileStatusKind.of(current) == .link)
        #expect(FileManager.default.fileExists(atPath: current.appendingPathComponent("ch/base").path))

        // A pointer naming nothing MapLoader wrote, an empty one, or one naming a generation
        // that is not there (a damaged card): the newest whole generation goes live, and no
        // generation is taken for unused. A `current.<n>` left by a switch that was cut off
        // goes with the next change.
        for text in ["generations/../../etc\n", "", "generations/99\n"] {
            try FileManager.default.removeItem(at: current)
            try Data(text.utf8).write(to: current)
            try Data("generations/98\n".utf8).write(to: data.appendingPathComponent("current.98"))
            let mended = try await site.loader(dataDirectory: data).packageTree()
            #expect(mended.packages.first { $0.id == "ch" }?.state == .installed, "current: \(text.debugDescription)")
            #expect(FileStatusKind.of(current) == .link, "current: \(text.debugDescription)")
            try await site.loader(dataDirectory: data).selectDataGroup("transit")
            #expect(!FileManager.default.fileExists(atPath: data.appendingPathComponent("current.98").path))
            #expect(try await site.loader(dataDirectory: data).verify().problems.isEmpty)
            try await site.loader(dataDirectory: data).deselectDataGroup("transit")
        }
    }
    @Test(arguments: ["garbage", "negative size", "no version"])
    func aDamagedStateIsRefusedThenRepaired(_ damage: String) async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["germany"])
        let stateFile = loader.currentFolder.appendingPathComponent("state.json")
        var state = try JSONCoding.decode(InstalledState.self, from: Data(contentsOf: stateFile))
        switch damage {
        case "garbage": try Data("{not json".utf8).write(to: stateFile)
        case "negative size":
            state.packages["de-berlin"]?["base"]?.size = -5
            try state.jsonData().write(to: stateFile)
        default:
            state.version = nil
            try state.jsonData().write(to: stateFile)
        }
        await #expect {
            _ = try await loader.packageTree()
        } throws: { error in
            guard case MapLoaderError.storageFailed(_, let reason) = error else { return false }
            return reason.contains("repair the data directory")
        }
        try await loader.repair()
        let installed = try await loader.packageTree().packages.filter { $0.state == .installed && $0.isLeaf }.map(\.id)
        #expect(Set(installed) == ["de-berlin", "de-hamburg"])
        #expect(try await loader.verify().problems.isEmpty)
    }
}
