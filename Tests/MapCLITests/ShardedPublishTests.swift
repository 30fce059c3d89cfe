import Foundation
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// `maploader shard plan|run|assemble`: a publish cut into tasks that separate processes
/// run against one shared site, giving the same bytes as a single-machine publish.
@Suite struct ShardedPublishTests {
    /// Every file below `root` (relative path → bytes).
    static func snapshot(_ root: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = enumerator?.nextObject() as? URL {
            guard try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true else { continue }
            files[String(url.path.dropFirst(root.path.count))] = try Data(contentsOf: url)
        }
        return files
    }

    @Test func twoWorkerProcessesAndAssemblyGiveTheSameSiteAsOnePublish() async throws {
        let dir = TemporaryDirectory("maploader-shard")
        _ = try SigningKeyFile.generate(at: dir.path("publisher.key"))
        let key = dir.path("publisher.key").path
        let date = ["SOURCE_DATE_EPOCH": "1790000000"]
        let flags = ["--level", "3", "--patch-depth", "2", "--valid-days", "1", "--key", key]
        var patchTasks = 0
        for revision in 1...3 {
            let release = dir.path("r\(revision)")
            _ = try ReleaseBuilder.make(at: release, revision: revision)
            // One machine.
            let single = try await CLI.run(
                [
                    "publish", release.path, "--site", dir.path("single").path,
                    "--version", "v\(revision)",
                ] + flags, environment: date)
            #expect(single.status == 0, "\(single.stderr)")
            // Plan, two workers with their own scratch folders at once, assemble.
            let planFile = dir.path("plan-\(revision).json").path
            let plan = try await CLI.run(
                [
                    "shard", "plan", release.path, "--site", dir.path("sharded").path,
                    "--version", "v\(revision)", "--output", planFile, "--json",
                ] + flags,
                environment: date)
            #expect(plan.status == 0, "\(plan.stderr)")
            let tasks = try PublishPlan.read(URL(fileURLWithPath: planFile)).tasks
            patchTasks += tasks.filter { $0.kind == .patch }.count
            let workers = try (0..<2).map { worker in
                try CLI.start([
                    "shard", "run", planFile, "--worker", "\(worker)", "--of", "2", "--jobs", "1",
                    "--scratch", dir.path("scratch-\(worker)").path,
                ])
            }
            for worker in workers {
                let result = try await RawThread.value { try CLI.finish(worker) }
                #expect(result.status == 0, "\(result.stderr)")
            }
            // A task run again is checked and skipped; assembly then publishes.
            if !tasks.isEmpty {
                let again = try await CLI.run(["shard", "run", planFile, "--task", "0"])
                #expect(again.status == 0 && again.stderr.contains("already done"), "\(again.stderr)")
            }
            let assemble = try await CLI.run(["shard", "assemble", planFile, "--key", key])
            #expect(assemble.status == 0, "\(assemble.stderr)")
        }
        #expect(patchTasks > 0)
        let single = try Self.snapshot(dir.path("single"))
        let sharded = try Self.snapshot(dir.path("sharded"))
        #expect(single.keys.sorted() == sharded.keys.sorted())
        #expect(single == sharded)
        #expect(single.keys.contains("/catalog.json.sig") && single.keys.contains { $0.hasPrefix("/blobs/") })
        #expect(!sharded.keys.contains { $0.hasPrefix("/.publish") })
    }

    @Test func aTaskRunTwiceWritesTheSameBytes() throws {
        let dir = TemporaryDirectory("maploader-shard")
        _ = try ReleaseBuilder.make(at: dir.path("r1"), revision: 1)
        _ = try ReleaseBuilder.make(at: dir.path("r2"), revision: 2)
        try Publisher.publish(release: dir.path("r1"), site: dir.path("site"), options: .init(version: "v1", level: 3))
        let plan = try PublishPlanner.plan(
            release: dir.path("r2"), site: dir.path("site"),
            options: .init(version: "v2", level: 3))
        let places = PublishTaskRunner.Places(plan: plan)
        let site = dir.path("site")
        for task in plan.tasks {
            _ = try PublishTaskRunner.run(task.id, of: plan, in: places)
            let resultFile = site.appendingPathComponent(".publish/v2/" + String(format: "task-%06d.json", task.id))
            let first = try Data(contentsOf: resultFile)
            try FileManager.default.removeItem(at: resultFile)
            _ = try PublishTaskRunner.run(task.id, of: plan, in: places)
            #expect(try Data(contentsOf: resultFile) == first, "task \(task.label)")
        }
        #expect(plan.tasks.contains { $0.kind == .patch } && plan.tasks.contains { $0.kind == .archive })
    }

    @Test func assemblyRefusesUnfinishedTasksDamagedOutputAndAMovedCatalog() throws {
        let dir = TemporaryDirectory("maploader-shard")
        _ = try ReleaseBuilder.make(at: dir.path("r1"), revision: 1)
        _ = try ReleaseBuilder.make(at: dir.path("r2"), revision: 2)
        let site = dir.path("site")
        try Publisher.publish(release: dir.path("r1"), site: site, options: .init(version: "v1", level: 3))
        let catalog = try Data(contentsOf: site.appendingPathComponent("catalog.json"))
        let plan = try PublishPlanner.plan(release: dir.path("r2"), site: site, options: .init(version: "v2", level: 3))
        let places = PublishTaskRunner.Places(plan: plan)

        // Half the tasks: refused, naming what is left; the site is as it was.
        let half = plan.tasks.filter { $0.id % 2 == 0 }
        for task in half { _ = try PublishTaskRunner.run(task.id, of: plan, in: places) }
        #expect(throws: PublishError.self) { try PublishAssembler.assemble(plan, keyFile: nil) }
        do {
            try PublishAssembler.assemble(plan, keyFile: nil)
        } catch {
            #expect("\(error)".contains("\(plan.tasks.count - half.count) of the \(plan.tasks.count) tasks of v2 have not finished"))
        }
        #expect(try Data(contentsOf: site.appendingPathComponent("catalog.json")) == catalog)

        // Every task, but one staged patch damaged: refused, naming the task.
        for task in plan.tasks where task.id % 2 == 1 { _ = try PublishTaskRunner.run(task.id, of: plan, in: places) }
        let patch = try #require(plan.tasks.first { $0.kind == .patch })
        let staged = site.appendingPathComponent(".publish/v2/" + String(format: "task-%06d.patch", patch.id))
        let good = try Data(contentsOf: staged)
        var bad = good
        bad[bad.count / 2] ^= 0xFF
        try bad.write(to: staged)
        do {
            try PublishAssembler.assemble(plan, keyFile: nil)
            Issue.record("a damaged patch was assembled")
        } catch {
            #expect("\(error)".contains("task \(patch.id)") && "\(error)".contains("damaged"))
        }
        #expect(try Data(contentsOf: site.appendingPathComponent("catalog.json")) == catalog)
        try good.write(to: staged)

        // Another publish landed meanwhile: the plan is stale.
        _ = try ReleaseBuilder.make(at: dir.path("r3"), revision: 3)
        try Publisher.publish(release: dir.path("r3"), site: site, options: .init(version: "v3", level: 3))
        do {
            try PublishAssembler.assemble(plan, keyFile: nil)
            Issue.record("a stale plan was assembled")
        } catch {
            #expect("\(error)".contains("changed since the plan"))
        }
    }
}

extension ShardedPublishTests {
    /// Results left by an earlier plan of the same version (other data, shifted task
    /// numbers) are never taken for this plan's: its tasks run again.
    @Test func resultsOfAnotherPlanOfTheSameVersionAreNotReused() throws {
        let dir = TemporaryDirectory("maploader-shard")
        for revision in 1...3 { _ = try ReleaseBuilder.make(at: dir.path("r\(revision)"), revision: revision) }
        let site = dir.path("site")
        try Publisher.publish(release: dir.path("r1"), site: site, options: .init(version: "v1", level: 3))
        let first = try PublishPlanner.plan(release: dir.path("r2"), site: site, options: .init(version: "v2", level: 3))
        for task in first.tasks { _ = try PublishTaskRunner.run(task.id, of: first, in: .init(plan: first)) }
        // The publisher fixes the data and plans v2 again.
        let second = try PublishPlanner.plan(release: dir.path("r3"), site: site, options: .init(version: "v2", level: 3))
        let changed = second.tasks.filter { task in !first.tasks.contains(task) }
        #expect(!changed.isEmpty)
        for task in changed {
            let line = try PublishTaskRunner.run(task.id, of: second, in: .init(plan: second))
            #expect(!line.contains("already done"), "\(line)")
        }
        for task in second.tasks where !changed.contains(task) {
            _ = try PublishTaskRunner.run(task.id, of: second, in: .init(plan: second))
        }
        try PublishAssembler.assemble(second, keyFile: nil)
        let manifest = try Manifest.decode(Data(contentsOf: site.appendingPathComponent(SiteLayout.manifest("v2"))))
        let berlin = try #require(manifest.root.leaves.first { $0.id == "de-berlin" }?.artifacts?["base"])
        #expect(berlin.treeHash == second.units.first { $0.package == "de-berlin" && $0.group == "base" }?.treeHash)
        #expect(berlin.treeHash != first.units.first { $0.package == "de-berlin" && $0.group == "base" }?.treeHash)
    }
}
