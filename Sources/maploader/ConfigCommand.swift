import ArgumentParser
import MapLoader
import MapModel

/// `maploader config [get|set|unset] quota …`: settings kept in the data directory.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Show or change settings kept in the data directory (the quota).",
        discussion: """
            quota: the most the data directory may hold (sizes as 2GB, 500MB, 1.5G, 750k, or \
            bytes). An install or update whose peak (installed maps plus its downloads and new \
            files) would pass it is refused up front, naming the largest installed packages; \
            every process using the directory honours it. Works offline.

            Examples:
              maploader config set quota 2GB
              maploader config get quota
              maploader config unset quota
            """,
        subcommands: [Get.self, Set.self, Unset.self],
        defaultSubcommand: Get.self)

    /// The settings `config` knows.
    enum Key: String, ExpressibleByArgument, CaseIterable {
        case quota
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Print a setting (all when none is named).")

        @OptionGroup var client: ClientOptions

        @Argument(help: "The setting: quota.")
        var key: Key = .quota

        func run() async throws {
            let quota = try await client.withLoader { try await $0.quota() }
            if client.json { return Output.json(["quota": quota]) }
            Output.line("quota \(quota.map(ByteFormat.string) ?? "none")")
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set", abstract: "Change a setting.")

        @OptionGroup var client: ClientOptions

        @Argument(help: "The setting: quota.")
        var key: Key

        @Argument(help: "Its value, e.g. 2GB.")
        var value: String

        func validate() throws {
            guard let bytes = ByteFormat.parse(value), bytes > 0 else {
                throw ValidationError("'\(value)' is not a size: write it as 2GB, 500MB, 1.5G, 750k or a number of bytes")
            }
        }

        func run() async throws {
            let bytes = ByteFormat.parse(value)
            try await client.withLoader { try await $0.setQuota(bytes) }
            if client.json { return Output.json(["quota": bytes]) }
            Output.line("quota \(bytes.map(ByteFormat.string) ?? "none")")
        }
    }

    struct Unset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "unset", abstract: "Remove a setting.")

        @OptionGroup var client: ClientOptions

        @Argument(help: "The setting: quota.")
        var key: Key

        func run() async throws {
            try await client.withLoader { try await $0.setQuota(nil) }
            if client.json { return Output.json(["quota": Int64?.none]) }
            Output.line("quota none")
        }
    }
}
