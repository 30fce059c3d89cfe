import ArgumentParser
import MapLoader

/// `maploader install <id>...`.
struct InstallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Install packages with the selected data groups.",
        discussion: """
        An inner node (a continent, a country) installs all its leaves. New packages are \
        installed at the version already installed; all of them switch in together or not at all.
        """)

    @OptionGroup var client: ClientOptions

    @Argument(help: "Package ids, e.g. de-berlin europe.")
    var ids: [String]

    func run() async throws {
        let report = try await client.withLoader { [ids] in try await $0.install(ids) }
        ReportPrinter.print(report, verb: "installed", json: client.json)
    }
}

/// `maploader uninstall <id>...`.
struct UninstallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "uninstall", abstract: "Remove installed packages (works offline).")

    @OptionGroup var client: ClientOptions

    @Argument(help: "Package ids; an inner node removes all its installed leaves.")
    var ids: [String]

    func run() async throws {
        let report = try await client.withLoader { [ids] in try await $0.uninstall(ids) }
        ReportPrinter.print(report, verb: "uninstalled", json: client.json)
    }
}

/// Prints what an install, uninstall or update did.
enum ReportPrinter {
    static func print(_ report: UpdateReport, verb: String, json: Bool) {
        if json { return Output.json(report) }
        let changed = report.steps.filter { $0.action != .keep }
        guard report.committed else {
            Output.line("nothing to do: everything is already as asked (version \(report.toVersion ?? "-"))")
            return
        }
        let packages = Set(changed.map(\.package)).sorted()
        Output.line("\(verb) \(packages.joined(separator: ", ")) at version \(report.toVersion ?? "-"): " +
                    "\(changed.count) group(s) changed, \(ByteFormat.string(report.downloadedBytes)) downloaded " +
                    "in \(String(format: "%.1f", report.seconds)) s")
    }
}
