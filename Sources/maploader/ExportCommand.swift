import ArgumentParser
import Foundation
import MapLoader
import MapModel

/// `maploader export <ids…> --to DIR`.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write installed packages as a small site another device installs from, with no network.",
        discussion: """
            The folder gets the signed catalog exactly as published, the manifest of the \
            installed version and the packages' files (under trees/). On the other device, \
            'maploader install <id> --server DIR' checks the signature and every file's hash as \
            for any site; later updates come from the real server as usual. Works offline; the \
            maps must be at the site's current version (run update first).

            Examples:
              maploader export de-berlin --to ./usb-site
            """)

    @OptionGroup var client: ClientOptions

    @Argument(help: "Installed package ids; an inner node exports its installed leaves.")
    var ids: [String]

    @Option(name: .long, help: ArgumentHelp("A new or empty folder for the site.", valueName: "folder"))
    var to: String

    func run() async throws {
        let folder = URL(fileURLWithPath: to)
        let report = try await client.withLoader { [ids] in try await $0.export(ids, to: folder) }
        if client.json { return Output.json(report) }
        Output.line(
            "exported \(report.packages.joined(separator: ", ")) at version \(report.version) "
                + "(\(report.groups) group(s), \(ByteFormat.string(report.bytes))) to \(report.folder)")
        Output.line("on the other device: maploader install \(report.packages.joined(separator: " ")) --server \(report.folder)")
    }
}
