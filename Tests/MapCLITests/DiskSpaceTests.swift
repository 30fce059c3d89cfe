import Foundation
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// Real full disks: small tmpfs mounts (mount(2) needs root, as CI and this machine have).
@Suite(.enabled(if: ReadOnlyMount.available, "needs mount(2) for a small tmpfs"))
struct DiskSpaceTests {
    @Test func shortfallIsFoundBeforeAnyDownload() async throws {
        let site = try TestSite()
        let mount = try ReadOnlyMount(size: "160k")
        defer { mount.unmount() }
        let loader = site.loader(dataDirectory: mount.url.appendingPathComponent("data"))
        site.server.resetStatistics()
        do {
            try await loader.install(["germany"])
            Issue.record("install on a too-small disk succeeded")
        } catch {
            guard case .insufficientSpace(let needed, let available, _, _) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(needed > available)
            #expect(error.description.contains(ByteFormat.string(needed)) && error.description.contains(ByteFormat.string(available)))
        }
        let blobBytes = site.server.statistics.bodyBytesSentByPath.filter { $0.key.contains("/blobs/") }.values.reduce(0, +)
        #expect(blobBytes == 0, "nothing was downloaded")
        #expect(!FileManager.default.fileExists(atPath: loader.currentFolder.path))
    }

    @Test func aFullInodeTableIsADiskSpaceFailure() async throws {
        let site = try TestSite()
        // Room for bytes, but only a few dozen files and folders.
        let mount = try ReadOnlyMount(size: "32m", inodes: 48)
        defer { mount.unmount() }
        let data = mount.url.appendingPathComponent("data")
        let loader = site.loader(dataDirectory: data)
        try await loader.install(["ch"])
        let before = try snapshot(loader.currentFolder)
        do {
            try await loader.install(["germany"])
            Issue.record("install with no inodes left succeeded")
        } catch {
            guard case .insufficientSpace = error else {
                Issue.record("\(error)")
                return
            }
            #expect(error.description.contains("inodes"))
        }
        #expect(try snapshot(loader.currentFolder) == before)
        let cli = try await CLI.run(["install", "germany"], site: site, data: data)
        #expect(cli.status == 8, "\(cli.stderr)")
    }

    /// Fills the disk as soon as the first download begins, as another app might.
    final class DiskFiller: MapLoaderDelegate {
        let file: URL
        init(file: URL) { self.file = file }

        func mapLoader(_ loader: MapLoader, didReceive event: MapLoaderEvent) {
            guard case .progress(let progress) = event, progress.phase == .download,
                !FileManager.default.fileExists(atPath: file.path)
            else { return }
            _ = FileManager.default.createFile(atPath: file.path, contents: nil)
            guard let handle = try? FileHandle(forWritingTo: file) else { return }
            let block = Data(repeating: 0xAB, count: 64 * 1024)
            while (try? handle.write(contentsOf: block)) != nil {}
            try? handle.close()
        }
    }

    @Test func diskFillingDuringTheOperationLeavesTheOldStateAndCleansUp() async throws {
        let site = try TestSite()
        let mount = try ReadOnlyMount(size: "4m")
        defer { mount.unmount() }
        let data = mount.url.appendingPathComponent("data")
        let loader = site.loader(dataDirectory: data)
        try await loader.install(["de-berlin"])
        let before = try snapshot(loader.currentFolder)

        let filler = DiskFiller(file: mount.url.appendingPathComponent("filler"))
        await loader.setSynchronousDelegate(filler)
        do {
            try await loader.install(["de-hamburg", "ch"])
            Issue.record("install on a disk that filled up succeeded")
        } catch {
            guard case .insufficientSpace = error else {
                Issue.record("\(error)")
                return
            }
        }
        #expect(try snapshot(loader.currentFolder) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: data.appendingPathComponent("staging").path).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: data.appendingPathComponent("downloads").path).isEmpty)

        // Once space is freed, the same install works.
        await loader.setSynchronousDelegate(nil)
        try FileManager.default.removeItem(at: filler.file)
        try await loader.install(["de-hamburg", "ch"])
        #expect(try snapshot(loader.currentFolder.appendingPathComponent("ch/base")) == snapshot(site.release(1, "ch", "base")))
    }

    /// A delta update needs room for the files it changes, not for the whole tree: the
    /// case of issue 23, a 9.6 MB package on a 20 MB disk with 8.3 MB free, one file of 40
    /// changed. The plan counts the patch and the changed file (the publisher records what
    /// each patch writes), and the update lands.
    @Test func aDeltaUpdateNeedsRoomForTheChangedFilesOnly() async throws {
        let dir = TemporaryDirectory()
        let tree = ReleaseTree(
            groups: [DataGroup(id: "base", title: "Base", required: true, default: true)],
            root: PackageNode(id: "world", title: "World", children: [PackageNode(id: "region", title: "Region")]))
        var rng = SeededGenerator(seed: 23)
        let files = (0..<40).map { _ in (0..<240_000).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        let key = try SigningKeyFile.generate(at: dir.path("publisher.key"))
        func publish(_ revision: Int) throws {
            let release = dir.path("r\(revision)")
            let builder = try ReleaseBuilder.make(at: release, revision: revision, tree: tree)
            try FileManager.default.removeItem(at: release.appendingPathComponent("data/region"))
            for (index, content) in files.enumerated() {
                var bytes = content
                if revision == 2, index == 7 { for offset in stride(from: 0, to: 2_000, by: 100) { bytes[offset] ^= 0xFF } }
                try builder.write(Data(bytes), "region/base/tile-\(index).bin")
            }
            try Publisher.publish(
                release: release, site: dir.path("site"),
                options: PublishOptions(version: "v\(revision)", level: 3, validity: 3600, keyFile: dir.path("publisher.key")))
        }
        try publish(1)
        let mount = try ReadOnlyMount(size: "20m")
        defer { mount.unmount() }
        let data = mount.url.appendingPathComponent("data")
        let loader = MapLoader(configuration: .init(server: dir.path("site").path, dataDirectory: data, trust: TrustPolicy(keys: [key])))
        try await loader.install(["region"])
        try publish(2)
        let free = try #require(FileSystem.availableSpace(at: mount.url.path))
        let target: Int64 = 8_300_000
        if free > target {
            try Data(count: Int(free - target)).write(to: mount.url.appendingPathComponent("filler"))
        }
        let check = try await loader.checkForUpdate()
        let step = try #require(check.plan.steps.first)
        #expect(step.method == .delta)
        #expect(check.plan.peakBytes < 1_000_000, "the plan needs \(check.plan.peakBytes) B for one changed 240 kB file")
        _ = try await loader.performUpdate()
        #expect(
            try Data(contentsOf: loader.currentFolder.appendingPathComponent("region/base/tile-7.bin"))
                == Data(contentsOf: dir.path("r2/data/region/base/tile-7.bin")))
    }
}
