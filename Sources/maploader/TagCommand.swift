import ArgumentParser
import MapLoader

/// `maploader tag <id> [key=value...] [--remove key...]`.
struct TagCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tag",
        abstract: "Attach your own key=value metadata to an installed package, or show it.",
        discussion: """
            Tags are kept across updates and removed with the package; info and list --json \
            show them. With no key=value and no --remove, prints the package's tags. Works \
            offline.

            Examples:
              maploader tag de-berlin trip=2026-summer owner=fleet-7
              maploader tag de-berlin --remove owner
              maploader tag de-berlin
            """)

    @OptionGroup var client: ClientOptions

    @Argument(help: "The installed package id, e.g. de-berlin.")
    var id: String

    @Argument(help: "Tags to set, as key=value.")
    var assignments: [String] = []

    @Option(name: .long, help: "A tag key to remove (repeatable).")
    var remove: [String] = []

    func validate() throws {
        for assignment in assignments where !assignment.contains("=") || assignment.hasPrefix("=") {
            throw ValidationError("'\(assignment)' is not key=value (e.g. trip=2026-summer)")
        }
    }

    func run() async throws {
        var changes: [String: String?] = [:]
        for assignment in assignments {
            let parts = assignment.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            changes[String(parts[0])] = String(parts[1])
        }
        for key in remove { changes[key] = .some(nil) }
        let tags = try await client.withLoader { [id, changes] loader in
            changes.isEmpty ? try await loader.tags(of: id) : try await loader.setTags(changes, on: id)
        }
        if client.json { return Output.json(tags) }
        if tags.isEmpty { return Output.line("\(id) has no tags") }
        for (key, value) in tags.sorted(by: { $0.key < $1.key }) { Output.line("\(key)=\(value)") }
    }
}
