import ArgumentParser
import Foundation
import MapLoader
import MapModel

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
            Output.line(Self.footer(tree))
            return
        }
        var rows = [["PACKAGE", "STATE", "VERSION", "DOWNLOAD", "ON DISK", "TITLE"]]
        for package in packages {
            rows.append([
                String(repeating: "  ", count: package.depth) + package.id, package.state.description,
                package.version ?? "-", package.downloadSize > 0 ? ByteFormat.string(package.downloadSize) : "-",
                package.sizeOnDisk > 0 ? ByteFormat.string(package.sizeOnDisk) : "-", package.title,
            ])
        }
        Output.table(rows)
        Output.line(Self.footer(tree))
    }

    /// The line under the table: the site's version, or why the site was not read.
    static func footer(_ tree: PackageTree) -> String {
        guard let offline = tree.offline else { return "site version \(tree.currentVersion)" }
        let age =
            offline.catalogAccepted.map { "the site's catalog was last read \(Self.age(since: $0)) ago, at version \(tree.currentVersion)" }
            ?? "no catalog of the site is kept"
        return "offline: showing what is installed; \(age) (\(offline.reason))"
    }

    /// `3 min`, `5 h`, `2 days`.
    static func age(since date: Date) -> String {
        let seconds = max(0, Int(Date().timeIntervalSince(date)))
        switch seconds {
        case ..<120: return "\(seconds) s"
        case ..<7200: return "\(seconds / 60) min"
        case ..<172_800: return "\(seconds / 3600) h"
        default: return "\(seconds / 86400) days"
        }
    }
}
