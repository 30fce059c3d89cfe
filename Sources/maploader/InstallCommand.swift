import ArgumentParser
import MapLoader
import MapModel

/// `maploader install <id>...`.
struct InstallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Install packages with the selected data groups.",
        discussion: """
            An inner node (a continent, a country) installs all its leaves. New packages are \
            installed at the version already installed; all of them switch in together or not at all. \
            --dry-run shows what would be downloaded and written, per package and group, and \
            changes nothing.

            Examples:
              maploader install de-berlin
              maploader install --dry-run europe
            """)

    @OptionGroup var client: ClientOptions

    @Argument(help: "Package ids, e.g. de-berlin europe.")
    var ids: [String]

    @Flag(name: .long, help: "Show what would be downloaded and written; change nothing.")
    var dryRun = false

    func run() async throws {
        if dryRun {
            let plan = try await client.withLoader { [ids] in try await $0.planInstall(ids) }
            return client.json ? Output.json(plan) : PlanPrinter.print(plan)
        }
        let report = try await client.withLoader { [ids] in try await $0.install(ids) }
        ReportPrinter.print(report, verb: "installed", json: client.json)
    }
}

/// `maploader uninstall <id>...`.
struct UninstallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "uninstall", abstract: "Remove installed packages (works offline).",
        discussion: """
            The files are gone from disk when the command returns, unless a reader (maploader \
            pin, an app's snapshot) still holds the previous version; the next change frees them.

            Examples:
              maploader uninstall de-berlin
              maploader uninstall --all
            """)

    @OptionGroup var client: ClientOptions

    @Argument(help: "Package ids; an inner node removes all its installed leaves.")
    var ids: [String] = []

    @Flag(name: .long, help: "Remove every installed package.")
    var all = false

    func validate() throws {
        if all == !ids.isEmpty {
            throw ValidationError(all ? "give either package ids or --all, not both" : "name at least one package to uninstall, or --all")
        }
    }

    func run() async throws {
        let report = try await client.withLoader { [ids, all] in
            all ? try await $0.uninstallAll() : try await $0.uninstall(ids)
        }
        ReportPrinter.print(report, verb: "uninstalled", json: client.json)
    }
}

/// Prints what an install, uninstall or update did.
enum ReportPrinter {
    static func print(_ report: UpdateReport, verb: String, json: Bool) {
        if json { return Output.json(report) }
        let changed = report.steps.filter { $0.action != .keep }
        guard report.committed else {
            Output.line("nothing to do: everything is already as asked" + (report.toVersion.map { " (version \($0))" } ?? ""))
            return
        }
        let packages = Set(changed.map(\.package)).sorted()
        Output.line(
            "\(verb) \(packages.joined(separator: ", "))" + (report.toVersion.map { " at version \($0)" } ?? "") + ": "
                + "\(changed.count) group(s) changed, \(ByteFormat.string(report.downloadedBytes)) downloaded "
                + "in \(String(format: "%.1f", report.seconds)) s"
                + (report.resumedBytes > 0 ? " (continued \(ByteFormat.string(report.resumedBytes)) of patched files from an interrupted run)" : ""))
    }
}
