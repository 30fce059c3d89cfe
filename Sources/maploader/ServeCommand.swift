import ArgumentParser
import Foundation
import ManifestServer

/// `maploader serve <site>`: a static HTTP server for a site folder.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a site folder over HTTP (GET, HEAD, Range, ETag, conditional GET).",
        discussion: """
            Any static HTTP server (nginx, a CDN, S3) serves a site just as well; this one is for \
            laptops, CI and tests. The fault options make it misbehave on purpose, to test clients.

            Examples:
              maploader serve ./site --port 8080 --drop-after 65536 --drop-count 3
              maploader serve ./site --error-rate 0.3 --error-status 503 --seed 7
              maploader serve ./site --throttle 200000 --corrupt-offset 1000
            """)

    @Argument(help: "The site folder (holding catalog.json).")
    var site: String

    @Option(name: .long, help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(name: .long, help: "Port to listen on; 0 picks a free one.")
    var port = 8080

    @Option(name: .customLong("drop-after"), help: ArgumentHelp("Fault: close each body after this many bytes.", valueName: "bytes"))
    var dropAfter: Int?

    @Option(name: .long, help: ArgumentHelp("Fault: drop only the first N bodies (with --drop-after).", valueName: "n"))
    var dropCount: Int?

    @Option(name: .long, help: ArgumentHelp("Fault: answer this fraction of requests (0…1) with --error-status.", valueName: "fraction"))
    var errorRate: Double = 0

    @Option(name: .long, help: "Fault: the status of injected errors (500 or 503).")
    var errorStatus = 503

    @Option(name: .long, help: ArgumentHelp("Fault: send bodies at most this fast.", valueName: "bytes-per-second"))
    var throttle: Int?

    @Option(name: .long, help: ArgumentHelp("Fault: flip the byte at this file offset in every body.", valueName: "offset"))
    var corruptOffset: Int64?

    @Option(name: .long, help: "Seed of the fault randomness (reproducible runs).")
    var seed: UInt64 = 1

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds a client has to send its whole request head (slower ones get 408).",
            valueName: "seconds"))
    var headTimeout: Double = 10

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds a send waits for a client that reads nothing before the connection is closed.",
            valueName: "seconds"))
    var sendTimeout: Double = 30

    @Flag(name: .long, help: "Print no request log.")
    var quiet = false

    @Flag(name: .long, help: "Print one JSON object ({\"url\", \"port\", \"site\"}) on stdout once listening.")
    var json = false

    func validate() throws {
        guard (0...1).contains(errorRate) else { throw ValidationError("--error-rate must be between 0 and 1") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        guard (0.001...86_400).contains(headTimeout) else { throw ValidationError("--head-timeout must be between 0.001 and 86400 seconds") }
        guard (0.001...86_400).contains(sendTimeout) else { throw ValidationError("--send-timeout must be between 0.001 and 86400 seconds") }
    }

    func run() async throws {
        let faults = FaultPlan(
            dropAfterBytes: dropAfter, dropCount: dropCount, errorRate: errorRate, errorStatus: errorStatus,
            bytesPerSecond: throttle, corruptOffset: corruptOffset, seed: seed)
        let printLine: @Sendable (String) -> Void = { line in Output.error(line) }
        let log = quiet ? nil : printLine
        let server = ManifestServer(
            root: URL(fileURLWithPath: site), host: host, port: port, faults: faults,
            headTimeout: headTimeout, sendTimeout: sendTimeout, log: log)
        let bound: Int
        do {
            bound = try server.start()
        } catch let error as ManifestServerError {
            let message = Self.sentence(for: error, site: site, host: host, port: port)
            Output.error("error: \(message)")
            if json { Output.json(ErrorJSON(error: message, exitCode: 1)) }
            throw ExitCode(1)
        }
        var isFolder: ObjCBool = false
        if !FileManager.default.fileExists(
            atPath: URL(fileURLWithPath: site).appendingPathComponent("catalog.json").path,
            isDirectory: &isFolder)
        {
            Output.error(
                "warning: \(site) has no catalog.json, so clients will find no site there; publish into it first (maploader publish <release> --site \(site) --version v1)"
            )
        }
        let url = "http://\(host):\(bound)/"
        if json {
            struct Listening: Encodable {
                let url: String
                let port: Int
                let site: String
            }
            Output.json(Listening(url: url, port: bound, site: site))
        } else {
            Output.line("serving \(site) at \(url) (Ctrl-C to stop)")
        }
        while true { try await Task.sleep(nanoseconds: 3_600_000_000_000) }
    }

    /// One sentence a person can act on for each way `start()` fails.
    static func sentence(for error: ManifestServerError, site: String, host: String, port: Int) -> String {
        switch error {
        case .rootNotDirectory:
            return "\(site) is not a folder: name the site folder that 'maploader publish --site' wrote"
        case .socket(let operation, let code) where operation == "bind" && code == EADDRINUSE:
            return "port \(port) on \(host) is already in use: stop the other server or pick another port (--port 0 picks a free one)"
        case .socket(let operation, let code) where operation == "bind" && code == EACCES:
            return "port \(port) on \(host) needs privileges: use a port above 1023"
        case .socket(let operation, let code):
            return "cannot \(operation) a socket on \(host):\(port): \(String(cString: strerror(code)))"
        case .addressResolution(let host, let message):
            return "cannot listen on '\(host)': \(message); use an address of this machine such as 127.0.0.1"
        case .alreadyStarted:
            return "the server was already started"
        }
    }
}
