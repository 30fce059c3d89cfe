import ArgumentParser
import Foundation
import MapLoader
import MapModel

/// What happens to the raw arguments before ArgumentParser sees them: shared options given
/// before the subcommand are moved after it, and an unknown command name is answered with
/// a suggestion and exit 64 instead of the main help.
enum CommandLineFront {
    /// Options every client command takes (``ClientOptions``), with whether each takes a
    /// value, in the order the main help lists them.
    static let sharedOptionList: [(name: String, takesValue: Bool)] = [
        ("--server", true), ("--data-dir", true), ("--trust-key", true), ("--add-trust-key", true), ("--timeout", true),
        ("--json", false), ("--allow-unsigned", false), ("--no-wait", false), ("--limit-rate", true), ("--threads", true),
        ("--transport", true), ("--network", true),
    ]

    /// ``sharedOptionList`` by name.
    static let sharedOptions = [String: Bool](uniqueKeysWithValues: sharedOptionList.map { ($0.name, $0.takesValue) })

    /// The shared options' names as the main help gives them.
    static var sharedOptionNames: String { sharedOptionList.map(\.name).joined(separator: ", ") }

    /// `arguments` with shared options that precede the subcommand moved after it (before a
    /// `--` terminator, whose rest belongs to another program).
    static func hoistSharedOptions(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let name = String(argument.split(separator: "=", maxSplits: 1).first ?? "")
            guard let takesValue = sharedOptions[name] else { break }
            leading.append(argument)
            if takesValue && !argument.contains("=") && index + 1 < arguments.count {
                leading.append(arguments[index + 1])
                index += 1
            }
            index += 1
        }
        guard !leading.isEmpty else { return arguments }
        var rest = Array(arguments[index...])
        let insertAt = rest.firstIndex(of: "--") ?? rest.endIndex
        rest.insert(contentsOf: leading, at: insertAt)
        return rest
    }

    /// A usage error for an unknown command name (`maploader instal`, `maploader help nope`),
    /// with a suggestion when one is close; `nil` when the names are known.
    static func unknownCommand(_ arguments: [String]) -> String? {
        let names = MapLoaderCommand.configuration.subcommands.map { $0.configuration.commandName ?? "" }
        guard let first = arguments.first, !first.hasPrefix("-") else { return nil }
        var word = first
        if first == "help" {
            guard let named = arguments.dropFirst().first, !named.hasPrefix("-") else { return nil }
            word = named
        }
        guard !names.contains(word) else { return nil }
        let hint = Suggestion.closest(to: word, among: names).map { " Did you mean '\($0)'?" } ?? ""
        return "unknown command '\(word)'.\(hint) Run 'maploader --help' for the list of commands."
    }
}

extension MapLoaderCommand {
    /// Parses and runs the command; every failure exits with its documented code, and with
    /// `--json` a failure also prints one JSON object on stdout.
    static func main() async {
        let arguments = CommandLineFront.hoistSharedOptions(Array(CommandLine.arguments.dropFirst()))
        let json = arguments.prefix { $0 != "--" }.contains("--json")
        if let message = CommandLineFront.unknownCommand(arguments) {
            Output.error("error: \(message)")
            if json { Output.json(ErrorJSON(error: message, exitCode: 64)) }
            Foundation.exit(64)
        }
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            // Commands print their own failures and throw an ExitCode; parse and validation
            // errors (exit 64) are printed here.
            let code = exitCode(for: error)
            if json, code != .success, !(error is ExitCode) {
                let message = fullMessage(for: error).split(separator: "\n").first.map(String.init) ?? "usage error"
                Output.json(ErrorJSON(error: message.replacingOccurrences(of: "Error: ", with: ""), exitCode: code.rawValue))
            }
            exit(withError: error)
        }
    }
}
