import Foundation
import MapPlatform
import MapTestSupport
import Testing

@testable import MapLoader

/// What map owners use every day: the cost of an install before paying it, what is on
/// disk, cleaning up, removing everything, and updates run from a timer.
@Suite struct OwnerFeatureTests {
    @Test func planInstallShowsTheCostAndChangesNothing() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        let plan = try await loader.planInstall(["germany"])
        #expect(!FileManager.default.fileExists(atPath: data.appendingPathComponent("current").path))
        let installs = plan.steps.filter { $0.action == .install }
        #expect(Set(installs.map(\.package)) == ["de-berlin", "de-hamburg"])
        #expect(Set(installs.map(\.group)) == ["base", "poi"])
        #expect(installs.allSatisfy { $0.downloadBytes > 0 && $0.writeBytes > 0 })
        #expect(plan.downloadBytes == installs.reduce(0) { $0 + $1.downloadBytes })
        #expect(plan.peakBytes >= plan.downloadBytes)

        let report = try await loader.install(["germany"])
        #expect(report.downloadedBytes == plan.downloadBytes)
        let usage = try await loader.diskUsage()
        // The plan reserves the files' bytes plus a block per file.
        let files = usage.packages.flatMap(\.groups).reduce(0) { $0 + $1.files }
        #expect(installs.reduce(0) { $0 + $1.writeBytes } == usage.installedBytes + 4096 * Int64(files))
        // Planning again after the install: nothing left to do.
        #expect(try await loader.planInstall(["germany"]).changesFiles == false)
    }

    @Test func diskUsageCountsHardLinksOnceAndMatchesDu() async throws {
        let site = try TestSite(revisions: [1, 2])
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        try await loader.install(["europe"])
        let usage = try await loader.diskUsage()
        #expect(usage.packages.map(\.id) == ["ch", "de-berlin", "de-hamburg"])
        let state = try Store(root: data).state()
        for package in usage.packages {
            #expect(package.bytes == state.size(of: package.id))
            for group in package.groups {
                // du -sb counts folders too (4 kB each here): within a block per file.
                let folder = data.appendingPathComponent("current/\(package.id)/\(group.group)")
                let du = try Int64(duApparentBytes(folder))
                #expect(group.bytes <= du && du - group.bytes <= 4096 * Int64(group.files + 8))
            }
        }
        #expect(usage.totalBytes == usage.installedBytes + usage.otherBytes)
        // Another copy of the live version (a reader's pinned version, say) shares every file
        // through hard links: the total grows by the bookkeeping only, not by the maps again.
        let copy = data.appendingPathComponent("generations/999")
        let live = try FileManager.default.destinationOfSymbolicLink(atPath: data.appendingPathComponent("current").path)
        for file in try FileTree.files(in: data.appendingPathComponent(live)) {
            try GenerationBuilder.link(
                data.appendingPathComponent(live).appendingPathComponent(file.path),
                to: copy.appendingPathComponent(file.path))
        }
        let after = try await loader.diskUsage()
        #expect(after.totalBytes == usage.totalBytes)
    }

    @Test func collectGarbageFreesLeftoversAndKeepsTheMaps() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        try await loader.install(["de-berlin"])
        let before = try snapshot(data.appendingPathComponent("current"))
        // Leftovers: an old partial download, a fresh one (maybe another process's fetch in
        // progress), a manifest of a version no longer installed.
        let downloads = data.appendingPathComponent("downloads")
        let old = downloads.appendingPathComponent(String(repeating: "a", count: 64))
        let fresh = downloads.appendingPathComponent(String(repeating: "b", count: 64))
        try Data(count: 300_000).write(to: old)
        try Data(count: 1_000).write(to: fresh)
        let stale = data.appendingPathComponent("cache/manifests/" + String(repeating: "c", count: 64))
        try Data(count: 5_000).write(to: stale)
        let hourAgo = Date().addingTimeInterval(-3600)
        for file in [old, stale] { try FileManager.default.setAttributes([.modificationDate: hourAgo], ofItemAtPath: file.path) }

        let report = try await loader.collectGarbage()
        #expect(report.removed.contains("downloads/" + old.lastPathComponent))
        #expect(report.removed.contains("cache/manifests/" + stale.lastPathComponent))
        #expect(report.freedBytes == 305_000)
        #expect(FileManager.default.fileExists(atPath: fresh.path))
        #expect(try snapshot(data.appendingPathComponent("current")) == before)
        #expect(try await loader.verify().ok)
        // Nothing left to free.
        #expect(try await loader.collectGarbage().freedBytes == 0)
    }

    /// A generation a reader held through an uninstall is freed by the next collection,
    /// and its report counts it (the recovery every writer runs first removes it).
    @Test func collectGarbageCountsAGenerationAReaderReleased() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        try await loader.install(["de-berlin"])
        let reader = try loader.openSnapshot()
        let held = try #require(FileSystem.names(in: data.appendingPathComponent("generations").path).first)
        try await loader.uninstall(["de-berlin"])
        #expect(FileSystem.names(in: data.appendingPathComponent("generations").path).contains(held), "the reader's version stays")
        reader.release()
        let report = try await loader.collectGarbage()
        #expect(report.removed.contains("generations/" + held), "\(report.removed)")
        #expect(report.freedBytes > 0)
        #expect(!FileSystem.names(in: data.appendingPathComponent("generations").path).contains(held))
    }

    @Test func uninstallAllRemovesEveryPackageAndFreesTheFiles() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        try await loader.install(["europe"])
        let report = try await loader.uninstallAll()
        #expect(report.committed)
        #expect(Set(report.steps.map(\.package)) == ["ch", "de-berlin", "de-hamburg"])
        #expect(try Store(root: data).state().packages.isEmpty)
        #expect(try await loader.diskUsage().installedBytes == 0)
        // Only the one (empty) live generation is left on disk.
        let generations = try FileManager.default.contentsOfDirectory(atPath: data.appendingPathComponent("generations").path)
        #expect(generations.count == 1)
        #expect(
            try FileTree.files(in: data.appendingPathComponent("generations/\(generations[0])")).allSatisfy {
                !$0.path.hasPrefix("ch/") && !$0.path.hasPrefix("de-")
            })
        #expect(try await loader.uninstallAll().committed == false)
    }

    @Test func timerUpdatesAreSilentUnlessSomethingChanged() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        #expect(try await CLI.run(["install", "de-berlin"], site: site, data: data).status == 0)
        let idle = try await CLI.run(["update", "--if-available", "--quiet"], site: site, data: data)
        #expect(idle.status == 0)
        #expect(idle.stdout.isEmpty)
        #expect(idle.stderr.isEmpty)

        try site.publish(2)
        let updated = try await CLI.run(["update", "--if-available", "--quiet"], site: site, data: data)
        #expect(updated.status == 0)
        let lines = updated.stdout.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(lines.first?.hasPrefix("updated de-berlin at version v2") == true)
        #expect(updated.stderr.isEmpty)
        #expect(try await CLI.run(["update", "--if-available", "--quiet"], site: site, data: data).stdout.isEmpty)
    }

    @Test func ownerCommandsThroughTheCLI() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let dry = try await CLI.run(["install", "--dry-run", "germany"], site: site, data: data)
        #expect(dry.status == 0)
        #expect(dry.stdout.contains("ON DISK") && dry.stdout.contains("de-hamburg/poi"))
        #expect(!FileManager.default.fileExists(atPath: data.appendingPathComponent("current").path))
        let dryJSON = try await CLI.run(["install", "--dry-run", "--json", "germany"], site: site, data: data)
        let plan = try JSONSerialization.jsonObject(with: Data(dryJSON.stdout.utf8)) as? [String: Any]
        #expect((plan?["downloadBytes"] as? Int ?? 0) > 0)

        #expect(try await CLI.run(["install", "germany"], site: site, data: data).status == 0)
        let du = try await CLI.run(["du", "--json"], site: site, data: data)
        let usage = try JSONSerialization.jsonObject(with: Data(du.stdout.utf8)) as? [String: Any]
        #expect((usage?["packages"] as? [[String: Any]])?.count == 2)
        #expect(try await CLI.run(["du"], site: site, data: data).stdout.contains("de-hamburg"))
        #expect(try await CLI.run(["gc"], site: site, data: data).stdout.hasPrefix("freed "))

        let both = try await CLI.run(["uninstall", "--all", "de-berlin"], site: site, data: data)
        #expect(both.status == 64)
        let all = try await CLI.run(["uninstall", "--all"], site: site, data: data)
        #expect(all.status == 0)
        #expect(all.stdout.hasPrefix("uninstalled de-berlin, de-hamburg"))
        #expect(try await CLI.run(["du"], site: site, data: data).stdout.hasPrefix("nothing installed"))
    }
}

/// `du -sb` of a folder: its apparent size in bytes, folders included.
private func duApparentBytes(_ folder: URL) throws -> Int {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/du")
    process.arguments = ["-sb", folder.path]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Int(String(decoding: output, as: UTF8.self).split(separator: "\t")[0]) ?? -1
}
