import ArgumentParser
import MapLoader

/// `maploader groups [select|deselect <g>]`.
struct GroupsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "groups",
        abstract: "Show data groups, or select and deselect them.",
        discussion: """
            The selection applies to future installs; 'maploader update' also fetches newly \
            selected groups and removes deselected ones for installed packages.
            """,
        subcommands: [Show.self, Select.self, Deselect.self],
        defaultSubcommand: Show.self)

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show", abstract: "List data groups and whether each is selected.")

        @OptionGroup var client: ClientOptions

        func run() async throws {
            let groups = try await client.withLoader { try await $0.dataGroups() }
            if client.json { return Output.json(groups) }
            var rows = [["GROUP", "SELECTED", "REQUIRED", "TITLE"]]
            for status in groups {
                rows.append([status.group.id, status.selected ? "yes" : "no", status.group.required ? "yes" : "no", status.group.title])
            }
            Output.table(rows)
        }
    }

    struct Select: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "select", abstract: "Select a data group.")

        @OptionGroup var client: ClientOptions

        @Argument(help: "The group id, e.g. poi.")
        var group: String

        func run() async throws {
            try await client.withLoader { [group] in try await $0.selectDataGroup(group) }
            if client.json { return Output.json(GroupChange(group: group, selected: true)) }
            Output.line("selected \(group); run 'maploader update' to fetch it for installed packages")
        }
    }

    struct Deselect: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "deselect", abstract: "Deselect a data group (not a required one).")

        @OptionGroup var client: ClientOptions

        @Argument(help: "The group id, e.g. poi.")
        var group: String

        func run() async throws {
            try await client.withLoader { [group] in try await $0.deselectDataGroup(group) }
            if client.json { return Output.json(GroupChange(group: group, selected: false)) }
            Output.line("deselected \(group); run 'maploader update' to remove its installed files")
        }
    }
}

/// What `groups select|deselect --json` prints.
struct GroupChange: Encodable {
    let group: String
    let selected: Bool
}
