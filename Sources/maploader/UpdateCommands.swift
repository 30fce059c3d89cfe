import ArgumentParser
import MapLoader
import MapModel
import MapPlanner

/// `maploader check-update`.
struct CheckUpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-update",
        abstract: "Show whether an update is available and what it would download.",
        discussion: "Exits 0 when up to date and 3 when an update is available.")

    @OptionGroup var client: ClientOptions

    @Flag(help: "Plan with patches (default) or with full archives only.")
    var strategy: UpdateStrategy = .delta

    func run() async throws {
        let check = try await client.withLoader { [strategy] in try await $0.checkForUpdate(strategy: strategy) }
        if client.json {
            Output.json(check)
        } else {
            Output.line("installed \(check.installedVersion ?? "nothing"), newest \(check.currentVersion)")
            PlanPrinter.print(check.plan)
            if check.updateAvailable, check.installedVersion == check.currentVersion {
                // Same version: only the data-group selection (or local damage) asks for a change;
                // at one version a group is removed only because it was deselected.
                let added = Set(check.plan.steps.filter { $0.action == .install }.map(\.group)).sorted()
                let removed = Set(check.plan.steps.filter { $0.action == .remove }.map(\.group)).sorted()
                let changes = added.map { "+\($0)" } + removed.map { "-\($0)" }
                if !changes.isEmpty {
                    Output.line("the version is current; the data-group selection changed (\(changes.joined(separator: ", ")))")
                }
            }
            Output.line(check.updateAvailable ? "update available: run 'maploader update'" : "up to date")
        }
        if check.updateAvailable { throw ExitCode(3) }
    }
}

/// `maploader update`.
struct UpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Update installed packages to the newest version.",
        discussion: """
            --delta (the default) takes the cheapest verified patch chain per group and falls \
            back to the full archive where no chain exists, it costs more, a patch is missing \
            or fails its check, or installed files were changed. --full always downloads full \
            archives. Selection changes (maploader groups) are applied too. All packages switch \
            to the new version together.

            For timers (scripts/systemd): --if-available first checks as a reader, without \
            waiting for the data directory's write lock, and does nothing when there is no \
            update; --quiet prints one line when something was updated and nothing otherwise. \
            Both exit 0 when up to date or updated.

            Examples:
              maploader update --dry-run
              maploader update --if-available --quiet
            """)

    @OptionGroup var client: ClientOptions

    @Flag(help: "Use patches where cheaper (default) or full archives only.")
    var strategy: UpdateStrategy = .delta

    @Flag(name: .long, help: "Show the plan without downloading or changing anything.")
    var dryRun = false

    @Flag(name: .long, help: "For timers: exit 0 whether an update was applied or none was available.")
    var ifAvailable = false

    @Flag(name: .long, help: "No progress; print one line only when something was updated (errors still go to stderr).")
    var quiet = false

    func run() async throws {
        // One loader for the check and the update: what it learnt of the site (the mirror
        // that worked, a host that answered) carries over.
        let (check, updated) = try await client.withLoader(quiet: quiet) {
            [strategy, dryRun, ifAvailable] loader -> (UpdateCheck?, UpdateReport?) in
            if ifAvailable {
                let check = try await loader.checkForUpdate(strategy: strategy)
                guard check.updateAvailable else { return (check, nil) }
            }
            return (nil, try await loader.performUpdate(strategy: strategy, dryRun: dryRun))
        }
        guard let report = updated else {
            let installed = check?.installedVersion
            if client.json { return Output.json(UpdateReport.unchanged(at: installed)) }
            return quiet ? () : Output.line("up to date (version \(installed ?? "-"))")
        }
        if quiet, !client.json, !dryRun {
            if report.committed { ReportPrinter.print(report, verb: "updated", json: false) }
            return
        }
        if dryRun, !client.json {
            PlanPrinter.print(Plan(version: report.toVersion ?? "-", steps: report.steps))
            return
        }
        ReportPrinter.print(report, verb: "updated", json: client.json)
    }
}

/// `maploader verify`.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Re-hash every installed file against what was installed.",
        discussion: "Exits 0 when every file matches and 6 when a group is inconsistent.")

    @OptionGroup var client: ClientOptions

    func run() async throws {
        let report = try await client.withLoader { try await $0.verify() }
        if client.json {
            Output.json(report)
        } else {
            for problem in report.problems { Output.line("\(problem.package)/\(problem.group): \(problem.detail)") }
            Output.line(
                report.ok
                    ? "ok: \(report.groupsChecked) group(s) verified" : "\(report.problems.count) of \(report.groupsChecked) group(s) inconsistent")
        }
        if !report.ok { throw ExitCode(6) }
    }
}

/// `maploader repair`.
struct RepairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "repair",
        abstract: "Re-fetch only the installed groups whose files were changed or damaged.",
        discussion: "Runs verify, then downloads the full archive of each broken group at the installed version.")

    @OptionGroup var client: ClientOptions

    func run() async throws {
        let report = try await client.withLoader { try await $0.repair() }
        if client.json { return Output.json(report) }
        guard report.committed else { return Output.line("nothing to repair: every installed file matches") }
        let fixed = report.steps.filter { $0.action != .keep }.map(\.name)
        Output.line("repaired \(fixed.joined(separator: ", ")): \(ByteFormat.string(report.downloadedBytes)) downloaded")
    }
}

extension UpdateStrategy: EnumerableFlag {}

/// Prints a plan as a table.
enum PlanPrinter {
    static func print(_ plan: Plan) {
        let rows = plan.steps.filter { $0.action != .keep }.map { step in
            [
                step.name, step.action.rawValue,
                step.method == .delta ? "patch " + step.chain.joined(separator: "→") : step.method.rawValue,
                ByteFormat.string(step.downloadBytes), step.action == .remove ? "-" : ByteFormat.string(step.writeBytes), step.reason,
            ]
        }
        if !rows.isEmpty { Output.table([["GROUP", "ACTION", "HOW", "DOWNLOAD", "ON DISK", "WHY"]] + rows) }
        Output.line(
            "download \(ByteFormat.string(plan.downloadBytes)) (full archives: \(ByteFormat.string(plan.fullBytes))), "
                + "peak disk \(ByteFormat.string(plan.peakBytes))")
    }
}
