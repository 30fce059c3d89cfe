import ArgumentParser
import Foundation
import MapLoader
import MapPublisher

/// `maploader shard plan|tasks|run|assemble`: `publish` cut into steps a batch system runs.
struct ShardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shard",
        abstract: "Publish on many machines: plan the tasks, run them anywhere, assemble the site.",
        discussion: """
            'maploader publish' is these steps on one machine. For a planet, run them on a batch \
            system (GNU parallel, xargs -P, a Kubernetes indexed Job, Slurm): 'plan' lists one \
            task per archive to write and per patch to build; 'run' does tasks, writing \
            content-addressed files into the site (a folder every worker mounts), so a task run \
            twice or on two machines gives the same bytes; 'assemble' checks every task's output \
            and writes the manifest and the signed catalog. Only 'assemble' needs the signing key.

            Examples:
              maploader shard plan ./release-v2 --site ./site --version v2 -o plan.json
              maploader shard run plan.json --worker 0 --of 2
              maploader shard run plan.json --worker 1 --of 2
              maploader shard assemble plan.json --key publisher.key
            """,
        subcommands: [ShardPlanCommand.self, ShardTasksCommand.self, ShardRunCommand.self, ShardAssembleCommand.self])
}

/// `maploader shard plan <release> --site <dir> --version <label> --output <plan.json>`.
struct ShardPlanCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Write the plan of a new version: its tasks, and what earlier versions already published.",
        discussion: """
            Reads and checks the release, hashes its files, and lists the tasks. The plan pins \
            the site's current catalog: if another publish lands first, 'assemble' refuses and \
            you plan again. The publication time is SOURCE_DATE_EPOCH when set, so two runs over \
            the same releases give byte-identical sites.

            Examples:
              maploader shard plan ./release-v1 --site ./site --version v3 -o n.json
            """)

    @Argument(help: "The release folder.")
    var release: String

    @Option(name: .long, help: "The site folder (created if missing).")
    var site: String

    @Option(name: .long, help: "The new version's label, e.g. 2026.12.")
    var version: String

    @Option(name: [.customShort("o"), .long], help: "Where to write the plan.")
    var output: String

    @OptionGroup var flags: PublishFlags

    @Flag(name: .long, help: "Print a summary as JSON.")
    var json = false

    func validate() throws { try flags.check() }

    func run() throws {
        do {
            try FileManager.default.createDirectory(atPath: site, withIntermediateDirectories: true)
            let plan = try PublishPlanner.plan(
                release: URL(fileURLWithPath: release), site: URL(fileURLWithPath: site),
                options: flags.options(version: version))
            try plan.write(to: URL(fileURLWithPath: output))
            let summary = PlanSummary(
                plan: output, version: plan.version, tasks: plan.tasks.count,
                archives: plan.tasks.filter { $0.kind == .archive }.count,
                patches: plan.tasks.filter { $0.kind == .patch }.count,
                reused: plan.units.filter { $0.reused != nil }.count)
            if json { return Output.json(summary) }
            Output.line(
                "planned \(plan.version) in \(output): \(summary.tasks) tasks (\(summary.archives) archives, "
                    + "\(summary.patches) patches), \(summary.reused) groups reuse an earlier archive")
        } catch {
            throw PublisherFailure(error, doing: "plan \(release) for \(site)", json: json).exit()
        }
    }

    struct PlanSummary: Encodable {
        let plan: String
        let version: String
        let tasks: Int
        let archives: Int
        let patches: Int
        let reused: Int
    }
}

/// `maploader shard tasks <plan.json>`: the task numbers, one per line.
struct ShardTasksCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tasks",
        abstract: "Print the plan's task numbers, one per line (for xargs or GNU parallel).",
        discussion: """
            Examples:
              maploader shard tasks n.json | xargs -n 1 maploader shard run n.json --task
            """)

    @Argument(help: "The plan file.")
    var plan: String

    func run() throws {
        do {
            let plan = try PublishPlan.read(URL(fileURLWithPath: plan))
            Output.line(plan.tasks.map { String($0.id) }.joined(separator: "\n"))
        } catch {
            throw PublisherFailure(error, doing: "read \(plan)", json: false).exit()
        }
    }
}

/// `maploader shard run <plan.json> [--task N …] [--worker I --of N]`.
struct ShardRunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run tasks of a plan: all of them, the ones given, or one worker's share.",
        discussion: """
            Each task writes a content-addressed file into the site and records its result; a \
            task already done is checked and skipped, so a retried worker resumes. With \
            --worker I --of N a worker runs the tasks whose number is I modulo N (a Kubernetes \
            indexed Job passes I as $JOB_COMPLETION_INDEX).

            Examples:
              maploader shard run n.json --task 0 --task 1
            """)

    @Argument(help: "The plan file.")
    var plan: String

    @Option(name: .long, parsing: .singleValue, help: "A task to run (repeatable).")
    var task: [Int] = []

    @Option(name: .long, parsing: .unconditional, help: "Run this worker's share of the tasks (0-based, with --of).")
    var worker: Int?

    @Option(name: .long, parsing: .unconditional, help: "The number of workers sharing the tasks.")
    var of: Int?

    @Option(name: .long, help: "The release folder, where this worker sees it (default: the plan's).")
    var release: String?

    @Option(name: .long, help: "The site folder, where this worker sees it (default: the plan's).")
    var site: String?

    @Option(name: .long, help: "A folder for unpacked old trees and patch scratch (default: inside the site).")
    var scratch: String?

    @Option(
        name: .long, parsing: .unconditional,
        help: "Tasks to run at once, the threads they leave idle going to a patch's files; default: one per core.")
    var jobs: Int?

    @Flag(name: .long, help: "Print what was done as JSON.")
    var json = false

    func validate() throws {
        guard (worker == nil) == (of == nil) else { throw ValidationError("--worker and --of go together") }
        if let worker, let of, !(of >= 1 && (0..<of).contains(worker)) {
            throw ValidationError("--worker must be between 0 and --of minus 1")
        }
        if worker != nil && !task.isEmpty { throw ValidationError("pick --task or --worker/--of, not both") }
        if let jobs, jobs < 1 { throw ValidationError("--jobs must be 1 or more") }
    }

    func run() throws {
        do {
            let plan = try PublishPlan.read(URL(fileURLWithPath: self.plan))
            var ids = plan.tasks.map(\.id)
            if !task.isEmpty {
                if let bad = task.first(where: { !ids.indices.contains($0) }) {
                    throw PublishError("the plan of \(plan.version) has tasks 0–\(ids.count - 1), not \(bad)")
                }
                ids = task
            } else if let worker, let of {
                ids = ids.filter { $0 % of == worker }
            }
            let places = PublishTaskRunner.Places(
                plan: plan, release: release.map(URL.init(fileURLWithPath:)),
                site: site.map(URL.init(fileURLWithPath:)),
                scratch: scratch.map(URL.init(fileURLWithPath:)),
                threads: Publisher.threadsPerPatch(jobs: jobs ?? Publisher.defaultJobs, tasks: ids.count))
            if let scratch { try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true) }
            let quiet = json
            try Publisher.runTasks(
                ids, of: plan, in: places, jobs: jobs ?? Publisher.defaultJobs,
                log: { if !quiet { Output.error("  " + $0) } })
            if json { return Output.json(["version": plan.version, "tasks": "\(ids.count)"]) }
            Output.line("ran \(ids.count) of the \(plan.tasks.count) tasks of \(plan.version)")
        } catch {
            throw PublisherFailure(error, doing: "run tasks of \(plan)", json: json).exit()
        }
    }
}

/// `maploader shard assemble <plan.json> [--key file]`.
struct ShardAssembleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assemble",
        abstract: "Check every task's output, then write the manifest and the signed catalog.",
        discussion: """
            Refuses, listing them, while tasks have not finished, and refuses a site whose \
            catalog changed since the plan. The new version becomes current only at the end.

            Examples:
              maploader shard assemble n.json --key publisher.key
            """)

    @Argument(help: "The plan file.")
    var plan: String

    @Option(name: .long, help: "The site folder (default: the plan's).")
    var site: String?

    @Option(name: .long, help: ArgumentHelp("Sign the catalog with this key file.", valueName: "key-file"))
    var key: String?

    @Flag(name: .long, help: "Sign a site that is signed with another key.")
    var rekey = false

    @Flag(name: .long, help: "Publish a signed site without a key (every client that trusts it will refuse it).")
    var unsigned = false

    @Flag(name: .long, help: "Print the report as JSON.")
    var json = false

    func run() throws {
        do {
            let plan = try PublishPlan.read(URL(fileURLWithPath: self.plan))
            let quiet = json
            let report = try PublishAssembler.assemble(
                plan, site: site.map(URL.init(fileURLWithPath:)),
                keyFile: key.map(URL.init(fileURLWithPath:)), rekey: rekey,
                unsigned: unsigned, log: { if !quiet { Output.error("  " + $0) } })
            if json { return Output.json(report) }
            Output.line(report.summary)
        } catch {
            throw PublisherFailure(error, doing: "assemble \(plan)", json: json).exit()
        }
    }
}
