import ArgumentParser
import MapLoader
import MapModel

/// `maploader du`.
struct DiskUsageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "du",
        abstract: "Show what each installed package and data group takes on disk.",
        discussion: """
            Sizes are file lengths (as du --apparent-size counts them); a file shared by two \
            versions through a hard link is counted once. "other" is everything else in the data \
            directory: partial downloads, the manifest cache, versions a reader still holds; \
            maploader gc frees what of it is unused. Works offline.

            Examples:
              maploader du
              maploader du --json
            """)

    @OptionGroup var client: ClientOptions

    func run() async throws {
        let usage = try await client.withLoader { try await $0.diskUsage() }
        if client.json { return Output.json(usage) }
        var rows = [["PACKAGE", "GROUP", "FILES", "SIZE"]]
        for package in usage.packages {
            for group in package.groups {
                rows.append([package.id, group.group, "\(group.files)", ByteFormat.string(group.bytes)])
            }
        }
        if usage.packages.isEmpty {
            Output.line("nothing installed")
        } else {
            Output.table(rows)
        }
        Output.line(
            "installed \(ByteFormat.string(usage.installedBytes)), other \(ByteFormat.string(usage.otherBytes)), "
                + "total \(ByteFormat.string(usage.totalBytes))")
    }
}

/// `maploader gc`.
struct CollectGarbageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gc",
        abstract: "Free disk space that no installed map needs.",
        discussion: """
            Removes versions no reader holds any more, leftovers of interrupted operations, \
            partial downloads untouched for five minutes (a newer one may be resumed) and cached \
            manifests of versions no longer installed. Installed maps are never touched. Works \
            offline.

            Examples:
              maploader gc
            """)

    @OptionGroup var client: ClientOptions

    func run() async throws {
        let report = try await client.withLoader { try await $0.collectGarbage() }
        if client.json { return Output.json(report) }
        for path in report.removed { Output.line("removed \(path)") }
        Output.line("freed \(ByteFormat.string(report.freedBytes))")
    }
}
