import Foundation
import MapTestSupport
import Testing

@testable import MapLoader

/// A data directory on exFAT, the file system of the SD cards and USB sticks that phones and
/// head units take: no symbolic links and no hard links. `current` is a file naming the live
/// generation there, carried-over files are copied, and everything else works as on any
/// other file system, with the same promise: old or new, never a mix.
@Suite(.serialized, .enabled(if: ExFATMount.unavailable == nil, "\(ExFATMount.unavailable ?? "")"))
struct ExFATTests {
    /// Install, a delta update under a reader pinned in another process, uninstall, gc and
    /// verify, all through the CLI on a real exFAT file system.
    @Test func everyOperationWorksWithoutLinks() async throws {
        let mount = try ExFATMount(size: "64M")
        defer { mount.unmount() }
        // The file system is what the test says: neither kind of link can be made there.
        let probe = mount.url.appendingPathComponent("probe")
        try Data("x".utf8).write(to: probe)
        #expect(symlink("probe", mount.url.appendingPathComponent("symlink").path) != 0)
        #expect(link(probe.path, mount.url.appendingPathComponent("hardlink").path) != 0)

        let site = try TestSite(revisions: [1])
        let data = mount.url.appendingPathComponent("data")
        let install = try await CLI.run(["install", "germany", "ch"], site: site, data: data)
        #expect(install.status == 0, "\(install.stderr)")
        let current = data.appendingPathComponent("current")
        #expect(FileStatusKind.of(current) == .file, "current is a pointer file on exFAT")
        #expect(try String(contentsOf: current, encoding: .utf8) == "generations/1\n")
        #expect(try snapshot(liveFolder(of: data).appendingPathComponent("de-berlin/base")) == snapshot(site.release(1, "de-berlin", "base")))

        // A reader pins v1 (in this process) while the CLI updates to v2 by patches.
        let reader = site.loader(dataDirectory: data)
        let pinned = try reader.openSnapshot()
        defer { pinned.release() }  // released before the unmount, whatever fails
        try site.publish(2)
        let update = try await CLI.run(["update", "--delta", "--json"], site: site, data: data)
        #expect(update.status == 0, "\(update.stderr)")
        #expect(update.stdout.contains("\"method\" : \"delta\""), "the update used patches: \(update.stdout)")
        #expect(try snapshot(pinned.url(package: "de-berlin", group: "base")) == snapshot(site.release(1, "de-berlin", "base")))
        #expect(try snapshot(liveFolder(of: data).appendingPathComponent("de-berlin/base")) == snapshot(site.release(2, "de-berlin", "base")))
        #expect(try await CLI.run(["verify"], site: site, data: data).status == 0)
        let generations = data.appendingPathComponent("generations")
        #expect(try FileManager.default.contentsOfDirectory(atPath: generations.path).count == 2, "the pinned generation is kept")
        pinned.release()

        let uninstall = try await CLI.run(["uninstall", "ch"], site: site, data: data)
        #expect(uninstall.status == 0, "\(uninstall.stderr)")
        #expect(!FileManager.default.fileExists(atPath: liveFolder(of: data).appendingPathComponent("ch").path))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: generations.path).count == 1,
            "the released pin's generation went with the next change")
        #expect(try await CLI.run(["gc"], site: site, data: data).status == 0)
        let verify = try await CLI.run(["verify"], site: site, data: data)
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        let list = try await CLI.run(["list", "--installed"], site: site, data: data)
        #expect(list.stdout.contains("de-berlin"), "\(list.stdout)")
        #expect(!list.stdout.contains(" ch "), "\(list.stdout)")
    }

    /// Ten SIGKILLs at random instants of a delta update on exFAT: each leaves exactly the
    /// old or the new version, and running the update again finishes it.
    @Test func killDuringUpdateLeavesOldOrNew() async throws {
        let mount = try ExFATMount(size: "200M")
        defer { mount.unmount() }
        let site = try TestSite(revisions: [1])
        // Made on exFAT itself: a data directory with a `current` link cannot be copied there.
        let template = mount.url.appendingPathComponent("template")
        #expect(try CrashTests.run(["install", "germany"], site: site, data: template).status == 0)
        #expect(FileStatusKind.of(template.appendingPathComponent("current")) == .file)
        try site.publish(2)
        try CrashTests().trial(
            "exfat-update", site: site, arguments: ["update", "--delta"], bytesPerSecond: 20_000, trials: 10,
            dataRoot: mount.url,
            prepare: { data in
                try? FileManager.default.removeItem(at: data)
                try FileManager.default.copyItem(at: template, to: data)
            })
    }
}

/// What kind of entry a path is, without following a final link.
enum FileStatusKind {
    case file, directory, link, missing

    static func of(_ url: URL) -> FileStatusKind {
        guard let type = try? FileManager.default.attributesOfItem(atPath: url.path)[.type] as? FileAttributeType else {
            return .missing
        }
        switch type {
        case .typeSymbolicLink: return .link
        case .typeDirectory: return .directory
        default: return .file
        }
    }
}
