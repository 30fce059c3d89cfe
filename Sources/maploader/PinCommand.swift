import ArgumentParser
import Foundation
import MapLoader

/// `maploader pin -- <command> [args…]`.
struct PinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin",
        abstract: "Run a command with the installed maps pinned at one version.",
        discussion: """
            The command gets MAPLOADER_SNAPSHOT, a folder whose <package>/<group>/<path> files \
            stay exactly as they are until the command exits, even when an update commits \
            meanwhile; an argument {} is replaced by that folder. maploader exits with the \
            command's exit code. The pin ends with the command (or if maploader is killed).

            Examples:
              maploader pin -- ls {}/de-berlin/base
              maploader pin -- sh -c 'du -sh "$MAPLOADER_SNAPSHOT"'
            """)

    @OptionGroup var client: ClientOptions

    @Argument(parsing: .postTerminator, help: ArgumentHelp("The command to run, after --.", valueName: "command"))
    var command: [String] = []

    func validate() throws {
        guard !command.isEmpty else { throw ValidationError("name a command after --, e.g. maploader pin -- ls {}") }
        if client.json { throw ValidationError("pin passes the command's own output through; --json does not apply") }
    }

    func run() async throws {
        let snapshot: MapSnapshot
        do {
            snapshot = try MapLoader(configuration: client.configuration).openSnapshot()
        } catch {
            throw Failure(error: error, json: false).exit()
        }
        defer { snapshot.release() }
        let folder = snapshot.root.path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command.map { $0.replacingOccurrences(of: "{}", with: folder) }
        var environment = ProcessInfo.processInfo.environment
        environment["MAPLOADER_SNAPSHOT"] = folder
        process.environment = environment
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            // A command killed by a signal exits as a shell reports it: 128 + the signal.
            process.terminationHandler = {
                continuation.resume(
                    returning: $0.terminationReason == .uncaughtSignal
                        ? 128 + $0.terminationStatus
                        : $0.terminationStatus)
            }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        if status != 0 { throw ExitCode(status) }
    }
}
