import Foundation
import MapTestSupport
import MapTransfer
import Synchronization
import Testing

@testable import MapLoader

/// Reads never wait behind a running change, through the same loader: while an update is
/// held in the middle of its downloads, the tree, a package's status, locate, disk usage
/// and tags answer from the installed version, and the update then commits as usual.
@Suite struct ReadsBesideChangeTests {
    /// A folder site whose archive and patch downloads (`blobs/…`) wait at a gate the test
    /// opens: an update held mid-download for as long as the test wants (a fake of a slow
    /// network; the files are real copies).
    final class GatedSource: SiteSource {
        let folder: FolderSource
        private let state = Mutex<(closed: Bool, held: Int, waiting: [CheckedContinuation<Void, Never>])>((false, 0, []))

        init(_ root: URL) { folder = FolderSource(root: root) }

        var baseURL: URL { folder.baseURL }
        /// Downloads waiting at the gate now.
        var held: Int { state.withLock { $0.held } }

        func close() { state.withLock { $0.closed = true } }

        func open() {
            let waiting = state.withLock { state in
                state.closed = false
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }

        func download(
            _ path: String, to file: URL, limit: TransferLimit, progress: @escaping @Sendable (Int64) -> Void
        ) async throws(MapLoaderError) {
            if path.hasPrefix("blobs/") {
                await withCheckedContinuation { continuation in
                    let passes = state.withLock { state in
                        guard state.closed else { return true }
                        state.held += 1
                        state.waiting.append(continuation)
                        return false
                    }
                    if passes { continuation.resume() }
                }
            }
            try await folder.download(path, to: file, limit: limit, progress: progress)
        }
    }

    @Test func readsAnswerFromTheInstalledVersionWhileAnUpdateIsHeldMidDownload() async throws {
        let site = try TestSite(revisions: [1], patchDepth: 1)
        let source = GatedSource(site.site)
        let loader = MapLoader(
            configuration: .init(server: nil, dataDirectory: site.dir.path("data"), trust: TrustPolicy(keys: [site.publicKey])),
            source: source)
        try await loader.install(["de-berlin"])
        _ = try await loader.setTags(["note": "mine"], on: "de-berlin")
        try site.publish(2, patchDepth: 1)

        source.close()
        let opened = Atomic<Bool>(false)
        let update = Task { try await loader.performUpdate() }
        while source.held == 0 { try await Task.sleep(for: .milliseconds(5)) }
        // The gate opens by itself after a minute, so a read that waited behind the update
        // would still end the test: it fails below instead of hanging.
        let opener = Task {
            try? await Task.sleep(for: .seconds(60))
            opened.store(true, ordering: .sequentiallyConsistent)
            source.open()
        }

        let clock = ContinuousClock()
        let started = clock.now
        let berlin = try await loader.package("de-berlin")
        // A figure for the record, never compared with a limit.
        print("a read beside the held update answered in \(clock.now - started)")
        let tree = try await loader.packageTree()
        let here = try await loader.package(atLatitude: 52.52, longitude: 13.40)
        let usage = try await loader.diskUsage()
        let tags = try await loader.tags(of: "de-berlin")
        // Every read came back while the update was still held at the gate.
        let openedByItself = opened.load(ordering: .sequentiallyConsistent)
        #expect(!openedByItself, "a read waited for the update")
        #expect(source.held > 0)
        #expect(berlin.version == "v1" && berlin.state == .installed, "\(berlin)")
        #expect(tree.offline?.reason.contains("update is running") == true, "\(String(describing: tree.offline))")
        #expect(here?.id == "de-berlin")
        #expect(usage.installedBytes > 0 && usage.packages.map(\.id) == ["de-berlin"])
        #expect(tags == ["note": "mine"])

        source.open()
        opener.cancel()
        let report = try await update.value
        #expect(report.toVersion == "v2")
        // Nothing runs now: reads go to the site again and see the new version.
        let after = try await loader.package("de-berlin")
        #expect(after.version == "v2", "\(after)")
        #expect(try await loader.packageTree().offline == nil)
    }

    /// A loader whose change waits for the lock another loader (another process) holds
    /// answers reads meanwhile: they do not queue behind its wait.
    @Test func readsAnswerWhileThisLoadersChangeWaitsForAnotherOnesLock() async throws {
        let site = try TestSite(revisions: [1], patchDepth: 1)
        let data = site.dir.path("data")
        let trust = TrustPolicy(keys: [site.publicKey])
        let source = GatedSource(site.site)
        let holder = MapLoader(configuration: .init(server: nil, dataDirectory: data, trust: trust), source: source)
        let waiter = MapLoader(
            configuration: .init(server: nil, dataDirectory: data, trust: trust, waitForLock: true), source: FolderSource(root: site.site))
        try await holder.install(["de-berlin"])
        try site.publish(2, patchDepth: 1)

        source.close()
        let update = Task { try await holder.performUpdate() }
        while source.held == 0 { try await Task.sleep(for: .milliseconds(5)) }
        let events = waiter.events()
        let install = Task { try await waiter.install(["de-hamburg"]) }
        for await event in events {
            if case .waitingForLock = event { break }
        }
        let opened = Atomic<Bool>(false)
        let opener = Task {
            try? await Task.sleep(for: .seconds(60))
            opened.store(true, ordering: .sequentiallyConsistent)
            source.open()
        }
        let berlin = try await waiter.package("de-berlin")
        let tree = try await waiter.packageTree()
        // Both answered while the holder's update was still at the gate, with the waiter's
        // install still waiting for the lock.
        let openedByItself = opened.load(ordering: .sequentiallyConsistent)
        #expect(!openedByItself, "a read waited for the lock")
        #expect(source.held > 0)
        #expect(berlin.version == "v1" && berlin.state == .installed, "\(berlin)")
        #expect(tree.offline != nil, "read beside the waiting install, from the data directory")

        source.open()
        opener.cancel()
        #expect(try await update.value.toVersion == "v2")
        _ = try await install.value
        #expect(try await waiter.package("de-hamburg").state == .installed)
    }
}
