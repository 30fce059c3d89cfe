import ArgumentParser
import Foundation
import Testing

@testable import maploader

/// The command line parsed in process (as swift-argument-parser tests its own): shared
/// options before and after the command, usage errors, and every `--help` page against a
/// snapshot in `Help/`. The spawned-binary tests (`CLITests`) keep what only a process
/// shows: exit codes, streams, terminals.
@Suite struct CommandParsingTests {
    /// A well-formed publisher key (32 bytes, base64): the options check the form.
    static let key = Data(repeating: 7, count: 32).base64EncodedString()

    /// Parses `arguments` as `maploader` does (shared options hoisted first).
    static func parse(_ arguments: [String]) throws -> ParsableCommand {
        try MapLoaderCommand.parseAsRoot(CommandLineFront.hoistSharedOptions(arguments))
    }

    @Test(arguments: [
        ["--server", "http://a", "--add-trust-key", key, "install", "de-berlin"],
        ["install", "de-berlin", "--server", "http://a", "--add-trust-key", key],
        ["--server=http://a", "install", "--add-trust-key=\(key)", "de-berlin"],
        ["--add-trust-key", key, "--server", "http://a", "install", "de-berlin"],
    ])
    func sharedOptionsComeBeforeOrAfterTheCommand(arguments: [String]) throws {
        let install = try #require(try Self.parse(arguments) as? InstallCommand, "\(arguments)")
        #expect(install.ids == ["de-berlin"])
        #expect(install.client.server == ["http://a"])
        #expect(install.client.addTrustKey == [Self.key])
    }

    /// Every option the front hoists is one of ``ClientOptions``, with or without a value as
    /// the front believes: a name added to one and not the other fails here.
    @Test(arguments: CommandLineFront.sharedOptionList.map(\.name))
    func everyHoistedOptionIsAClientOption(name: String) throws {
        let takesValue = try #require(CommandLineFront.sharedOptions[name] as Bool?)
        let value = [
            "--threads": "2", "--timeout": "5", "--transport": "curl", "--network": "any", "--limit-rate": "500k",
            "--trust-key": Self.key, "--add-trust-key": Self.key,
        ][name, default: "x"]
        let arguments = [name] + (takesValue ? [value] : []) + ["list"]
        let command = try Self.parse(arguments)
        #expect(command is ListCommand, "\(arguments) parsed as \(type(of: command))")
        // The same option given after the command parses to the same thing.
        #expect(type(of: try Self.parse(["list"] + arguments.dropLast())) == ListCommand.self)
    }

    /// And every option of ``ClientOptions`` is one the front hoists.
    @Test func everyClientOptionIsHoisted() {
        let lines = ClientOptions.helpMessage(columns: 1000).split(separator: "\n")
        let names = Set(
            lines.compactMap { line -> String? in
                let trimmed = line.drop { $0 == " " }
                guard line.hasPrefix("  "), trimmed.hasPrefix("--") else { return nil }
                return String(trimmed.prefix { $0 != " " && $0 != "," })
            })
        #expect(names.subtracting(["--help"]) == Set(CommandLineFront.sharedOptionList.map(\.name)), "\(names)")
    }

    @Test func theRestAfterADoubleDashIsNotHoisted() {
        let arguments = ["--json", "pin", "de-berlin", "--", "cat", "--json"]
        #expect(CommandLineFront.hoistSharedOptions(arguments) == ["pin", "de-berlin", "--json", "--", "cat", "--json"])
    }

    @Test func anUnknownCommandGetsASuggestion() {
        #expect(CommandLineFront.unknownCommand(["instal", "x"])?.contains("Did you mean 'install'?") == true)
        #expect(CommandLineFront.unknownCommand(["help", "updat"])?.contains("'update'") == true)
        #expect(CommandLineFront.unknownCommand(["install", "x"]) == nil)
        #expect(CommandLineFront.unknownCommand(["--help"]) == nil)
    }

    @Test(arguments: [
        ["install"],  // no package
        ["install", "x", "--threads", "many"],
        ["install", "x", "--no-such-option"],
        ["update", "--delta", "--full"],
    ])
    func aUsageErrorExits64(arguments: [String]) {
        do {
            let command = try Self.parse(arguments)
            Issue.record("\(arguments) parsed as \(type(of: command))")
        } catch {
            #expect(MapLoaderCommand.exitCode(for: error).rawValue == 64, "\(arguments): \(error)")
            #expect(!MapLoaderCommand.message(for: error).isEmpty)
        }
    }

    /// Every command's path from the root, `maploader` first.
    static func commandPaths() -> [[ParsableCommand.Type]] {
        func walk(_ path: [ParsableCommand.Type]) -> [[ParsableCommand.Type]] {
            [path] + path.last!.configuration.subcommands.flatMap { walk(path + [$0]) }
        }
        return walk([MapLoaderCommand.self])
    }

    /// Where the help snapshots live (`MAPLOADER_RECORD_HELP=1` rewrites them).
    static let snapshots = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Help")

    @Test func everyHelpPageMatchesItsSnapshot() throws {
        let record = ProcessInfo.processInfo.environment["MAPLOADER_RECORD_HELP"] == "1"
        var names: Set<String> = []
        for path in Self.commandPaths() {
            let name = path.map { $0.configuration.commandName ?? "?" }.joined(separator: "-")
            names.insert(name + ".txt")
            let help = MapLoaderCommand.helpMessage(for: path.last!, columns: 100) + "\n"
            let file = Self.snapshots.appendingPathComponent(name + ".txt")
            if record {
                try FileManager.default.createDirectory(at: Self.snapshots, withIntermediateDirectories: true)
                try Data(help.utf8).write(to: file)
                continue
            }
            let snapshot = try? String(contentsOf: file, encoding: .utf8)
            #expect(
                snapshot == help,
                "\(name): the help differs from Tests/MapCLITests/Help/\(name).txt; if the change is meant, run MAPLOADER_RECORD_HELP=1 swift test --filter CommandParsingTests and review the diff"
            )
        }
        // No snapshot of a command that is gone.
        let stored = Set(try FileManager.default.contentsOfDirectory(atPath: Self.snapshots.path))
        #expect(record || stored == names, "extra: \(stored.subtracting(names)), missing: \(names.subtracting(stored))")
        // Every page teaches: an abstract, and each command with options shows them.
        #expect(names.count > 20)
    }

    @Test func everyCommandHasAnAbstractAndItsExamplesRunIt() {
        for path in Self.commandPaths().dropFirst() {
            let configuration = path.last!.configuration
            let name = configuration.commandName ?? "?"
            #expect(!configuration.abstract.isEmpty, "\(name) has no abstract")
            let examples = configuration.discussion.split(separator: "\n").filter {
                $0.trimmingCharacters(in: .whitespaces).hasPrefix("maploader ")
            }
            // A page's examples may show a workflow around the command, but one runs it.
            #expect(examples.isEmpty || examples.contains { $0.contains(" \(name)") }, "\(name): \(examples)")
        }
    }
}
