import ArgumentParser
import MapLoader

/// `maploader list`: the package tree with each node's state.
struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Show the package tree with each package's state, version and sizes.",
        discussion: """
        States: notInstalled, partiallyInstalled, installed, updateAvailable, inconsistent \
        (installed files were changed: run 'maploader verify' and 'maploader repair').
        """)

    @OptionGroup var client: ClientOptions

    @Flag(name: .long, help: "Show only packages with something installed.")
    var installed = false

    func run() async throws {
        let tree = try await client.withLoader { try await $0.packageTree() }
        let packages = installed ? tree.packages.filter { $0.state != .notInstalled } : tree.packages
        if client.json {
            var filtered = tree
            filtered.packages = packages
            Output.json(filtered)
            return
        }
        if packages.isEmpty {
            Output.line("nothing is installed: see 'maploader list' for packages, then 'maploader install <id>'")
            Output.line("site version \(tree.currentVersion)")
            return
        }
        var rows = [["PACKAGE", "STATE", "VERSION", "DOWNLOAD", "ON DISK", "TITLE"]]
        for package in packages {
            rows.append([String(repeating: "  ", count: package.depth) + package.id, package.state.rawValue,
                         package.version ?? "-", package.downloadSize > 0 ? ByteFormat.string(package.downloadSize) : "-",
                         package.sizeOnDisk > 0 ? ByteFormat.string(package.sizeOnDisk) : "-", package.title])
        }
        Output.table(rows)
        Output.line("site version \(tree.currentVersion)")
    }
}
