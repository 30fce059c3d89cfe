import Foundation
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// A copy-on-write file system on a loop device: XFS with reflink (or without, to compare)
/// or btrfs, like APFS on Apple devices. Mounting needs root and `mkfs.xfs` / `mkfs.btrfs`
/// (Debian xfsprogs and btrfs-progs, installed by setup.sh).
struct ReflinkMount {
    let url: URL
    let image: URL

    static let available: Bool = {
        guard let probe = try? ReflinkMount(size: "320M") else { return false }  // XFS wants 300 MB at least
        probe.unmount()
        return true
    }()

    static let btrfsAvailable: Bool = {
        guard let probe = try? ReflinkMount(size: "320M", btrfs: true) else { return false }
        probe.unmount()
        return true
    }()

    init(size: String, reflink: Bool = true, btrfs: Bool = false) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("maploader-cow-\(UUID().uuidString)")
        image = URL(fileURLWithPath: url.path + ".img")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let mkfs = btrfs ? ["mkfs.btrfs", "-q", image.path] : ["mkfs.xfs", "-q", "-m", "reflink=\(reflink ? 1 : 0)", image.path]
        guard ReadOnlyMount.shell("truncate", "-s", size, image.path), ReadOnlyMount.shell(mkfs),
            ReadOnlyMount.shell("mount", "-o", "loop", image.path, url.path)
        else {
            try? FileManager.default.removeItem(at: url)
            try? FileManager.default.removeItem(at: image)
            throw CocoaError(.fileWriteNoPermission)
        }
    }

    /// Bytes in use on the file system, once what was written or freed is on disk (btrfs
    /// returns freed extents only when its transaction commits).
    var used: Int64 {
        ReadOnlyMount.shell("sync", "-f", url.path)
        var info = statvfs()
        statvfs(url.path, &info)
        return Int64(info.f_blocks - info.f_bfree) * Int64(info.f_frsize)
    }

    func unmount() {
        _ = ReadOnlyMount.shell("umount", url.path)
        try? FileManager.default.removeItem(at: url)
        try? FileManager.default.removeItem(at: image)
    }
}

@Suite(.enabled(if: ReflinkMount.available, "needs root, a loop device and mkfs.xfs (xfsprogs) for an XFS image with reflink"))
struct CloneTests {
    /// A 24 MB map file changed in ten places, patched in 1 MB segments: on XFS with reflink
    /// the new file is a clone of the old one with only its changed blocks written, so the
    /// update takes a small fraction of the file in extra space (the old version is held by
    /// a reader meanwhile, its worst moment), and the plan predicts it.
    @Test func aPatchedLargeFileTakesOnlyItsChangedBlocks() async throws {
        // scripts/bench-disk.sh measures larger files through this test.
        let megabytes = ProcessInfo.processInfo.environment["MAPLOADER_CLONE_MB"].flatMap { Int($0) } ?? 24
        // MAPLOADER_CLONE_REFLINK=0: the same on XFS without reflink (no clones: the figures
        // before clone-and-patch, a whole second file).
        let reflink = ProcessInfo.processInfo.environment["MAPLOADER_CLONE_REFLINK"] != "0"
        let (size, predicted, extra) = try await Self.update(megabytes: megabytes, reflink: reflink, btrfs: false)
        if reflink {
            #expect(extra < Int64(size) / 10, "the update took \(extra) B of extra space for a \(size) B file")
            #expect(predicted < Int64(size) / 10, "the plan predicts \(predicted) B")
        }
        #expect(abs(Double(predicted) - Double(extra)) <= Double(extra) * 0.1, "predicted \(predicted) B, took \(extra) B")
        print("clone: \(size) B file, 10 edits, reflink \(reflink ? "on" : "off"): predicted \(predicted) B, took \(extra) B")
    }

    /// The same on btrfs, which clones in 4 KiB blocks where XFS copies 128 KiB extents on
    /// write: the update takes a small fraction of the file, and the plan (counted in XFS's
    /// extents) is never short of what it took.
    @Test(.enabled(if: ReflinkMount.btrfsAvailable, "needs mkfs.btrfs (btrfs-progs) and a kernel with btrfs"))
    func onBtrfsTooAPatchedLargeFileTakesOnlyItsChangedBlocks() async throws {
        let (size, predicted, extra) = try await Self.update(megabytes: 24, reflink: true, btrfs: true)
        #expect(extra > 0 && extra < Int64(size) / 10, "the update took \(extra) B of extra space for a \(size) B file")
        #expect(Double(predicted) >= Double(extra) * 0.9, "predicted \(predicted) B, took \(extra) B")
        print("clone on btrfs: \(size) B file, 10 edits: predicted \(predicted) B, took \(extra) B")
    }

    /// Installs a file of `megabytes` changed in ten places on a fresh copy-on-write image,
    /// publishes the change, and updates while a reader holds the old version: the file's
    /// size, the plan's predicted peak and the extra space the update took.
    static func update(megabytes: Int, reflink: Bool, btrfs: Bool) async throws -> (size: Int, predicted: Int64, extra: Int64) {
        let dir = TemporaryDirectory()
        let size = megabytes << 20
        var rng = SeededGenerator(seed: 5)
        var content = [UInt8](repeating: 0, count: size)
        for index in content.indices { content[index] = UInt8(truncatingIfNeeded: rng.next()) }
        let tree = ReleaseTree(
            groups: [DataGroup(id: "base", title: "Base", required: true, default: true)],
            root: PackageNode(id: "world", title: "World", children: [PackageNode(id: "region", title: "Region")]))
        let key = try SigningKeyFile.generate(at: dir.path("publisher.key"))
        func publish(_ revision: Int) throws {
            let release = dir.path("r\(revision)")
            let builder = try ReleaseBuilder.make(at: release, revision: revision, tree: tree)
            try FileManager.default.removeItem(at: release.appendingPathComponent("data/region"))
            var bytes = content
            if revision == 2 { for place in 0..<10 { bytes[place * (size / 10) + 12_345] ^= 0xFF } }
            try builder.write(Data(bytes), "region/base/map.bin")
            var options = PublishOptions(version: "v\(revision)", level: 3, validity: 3600, keyFile: dir.path("publisher.key"))
            options.segmentLength = 1 << 20
            try Publisher.publish(release: release, site: dir.path("site"), options: options)
        }
        try publish(1)
        let mount = try ReflinkMount(size: "\(max(400, megabytes * 3))M", reflink: reflink, btrfs: btrfs)
        defer { mount.unmount() }
        let loader = MapLoader(
            configuration: .init(
                server: dir.path("site").path, dataDirectory: mount.url.appendingPathComponent("data"),
                trust: TrustPolicy(keys: [key])))
        try await loader.install(["region"])
        try publish(2)
        let check = try await loader.checkForUpdate()
        #expect(check.plan.steps.first?.method == .delta)
        // A reader holds v1 throughout: the old file stays, as at the update's worst moment.
        let reader = try loader.openSnapshot()
        defer { reader.release() }
        let before = mount.used
        _ = try await loader.performUpdate()
        let extra = mount.used - before
        #expect(
            try Data(contentsOf: loader.currentFolder.appendingPathComponent("region/base/map.bin"))
                == Data(contentsOf: dir.path("r2/data/region/base/map.bin")))
        return (size, check.plan.peakBytes, extra)
    }
}
