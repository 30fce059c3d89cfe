import ArgumentParser
import Foundation
import MapLoader
import MapModel
import MapPlatform

/// Options every client command shares: where the site is and where maps go.
struct ClientOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The site's URL (http://, https://, file:// or a folder); repeat it for mirrors.",
            discussion:
                "Defaults to $MAPLOADER_SERVER, with mirrors in $MAPLOADER_MIRRORS (separated by spaces). Files come from whichever mirror answers; one that fails hands over to the next, which continues with Range.",
            valueName: "url"))
    var server: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Where installed maps live.",
            discussion:
                "Defaults to $MAPLOADER_DATA_DIR, else the platform's folder: $XDG_DATA_HOME/maploader, else ~/.local/share/maploader (Linux); ~/Library/Application Support/maploader (macOS).",
            valueName: "dir"))
    var dataDir: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Trust this publisher public key (base64, from 'maploader keygen'); saved in the data directory.",
            discussion: "Also $MAPLOADER_TRUST_KEY.", valueName: "key"))
    var trustKey: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Trust this publisher public key beside those the data directory trusts already (a second key, or a rotation), and say so.",
            valueName: "key"))
    var addTrustKey: [String] = []

    @Flag(name: .long, help: "Accept catalogs without a trusted signature (only for sites you control). Also $MAPLOADER_ALLOW_UNSIGNED=1.")
    var allowUnsigned = false

    @Flag(name: .long, help: "Print machine-readable JSON on stdout instead of text.")
    var json = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Give up on a server that sends nothing for this many seconds (default 30).",
            discussion: "Also $MAPLOADER_TIMEOUT. A server slower than 1 kB/s over a minute fails too.",
            valueName: "seconds"))
    var timeout: Double?

    @Flag(name: .long, help: "Fail at once (exit 10) instead of waiting when another maploader is changing the data directory.")
    var noWait = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Cap download bandwidth, e.g. 500k or 2MB (bytes per second).",
            discussion: "Also $MAPLOADER_LIMIT_RATE. Downloads running side by side share the cap.",
            valueName: "rate"))
    var limitRate: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Use at most this many threads to apply patches (default: every core).",
            discussion:
                "Also $MAPLOADER_THREADS. Threads rebuild compressed files after patching inside them, and hash and write a large patched file while it decodes. 1 keeps a background update on one core; the result is the same.",
            valueName: "n"))
    var threads: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The HTTP client for downloads: curl or foundation (URLSession).",
            discussion:
                "Also $MAPLOADER_TRANSPORT. Defaults to curl on Linux, foundation elsewhere; both fetch the same bytes with the same checks.",
            valueName: "name"))
    var transport: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Which networks may carry downloads: any, or unmetered (not cellular, not Low Data Mode).",
            discussion:
                "Also $MAPLOADER_NETWORK. With unmetered, a download on a cellular network stops with exit 11 and keeps what it fetched; on Linux a default route through a cellular modem (wwan) counts as cellular. For timers: maploader update --if-available --network unmetered.",
            valueName: "kind"))
    var network: String?

    func validate() throws {
        for (given, source) in [(network, "--network"), (ProcessInfo.processInfo.environment["MAPLOADER_NETWORK"], "MAPLOADER_NETWORK")] {
            if let given, Self.networkPolicy(given) == nil {
                throw ValidationError("\(source) '\(given)' is not a kind of network: use any or unmetered")
            }
            if network != nil { break }
        }
        if let transport, MapLoader.Configuration.Transport(transport) == nil {
            let names = MapLoader.Configuration.Transport.available.map(\.name).joined(separator: " or ")
            throw ValidationError("--transport '\(transport)' is not a transport this build has: use \(names)")
        }
        if transport == nil, let fromEnv = ProcessInfo.processInfo.environment["MAPLOADER_TRANSPORT"],
            MapLoader.Configuration.Transport(fromEnv) == nil
        {
            let names = MapLoader.Configuration.Transport.available.map(\.name).joined(separator: " or ")
            throw ValidationError("MAPLOADER_TRANSPORT is '\(fromEnv)', not a transport this build has: use \(names), or unset it")
        }
        if let threads, threads < 1 {
            throw ValidationError("--threads must be 1 or more")
        }
        if let timeout, !(timeout > 0 && timeout.isFinite) {
            throw ValidationError("--timeout must be a positive number of seconds")
        }
        if let limitRate, (ByteFormat.parse(limitRate) ?? 0) < 1 {
            throw ValidationError("--limit-rate '\(limitRate)' is not a rate: write it as 500k, 2MB or bytes per second")
        }
        if let dataDir, dataDir.isEmpty {
            throw ValidationError("--data-dir is empty: name the folder where maps live")
        }
        if dataDir == nil, let fromEnv = ProcessInfo.processInfo.environment["MAPLOADER_DATA_DIR"], fromEnv.isEmpty {
            throw ValidationError("MAPLOADER_DATA_DIR is set but empty: name the folder where maps live, or unset it")
        }
        for key in trustKey + addTrustKey where PublicKey(base64: key) == nil {
            throw ValidationError("'\(key)' is not a base64 Ed25519 public key (maploader keygen prints one)")
        }
    }

    /// The policy a `--network` value names.
    static func networkPolicy(_ name: String) -> NetworkPolicy? {
        switch name {
        case "any": .any
        case "unmetered": .unmetered
        default: nil
        }
    }

    /// The resolved configuration.
    var configuration: MapLoader.Configuration {
        let env = ProcessInfo.processInfo.environment
        let directory: String
        if let dataDir {
            directory = dataDir
        } else if let fromEnv = env["MAPLOADER_DATA_DIR"], !fromEnv.isEmpty {
            directory = fromEnv
        } else {
            directory = MapLoader.Configuration.defaultDataDirectory.path
        }
        let keys = (trustKey + addTrustKey + (env["MAPLOADER_TRUST_KEY"].map { [$0] } ?? [])).compactMap(PublicKey.init(base64:))
        let trust = TrustPolicy(
            keys: keys, allowUnsigned: allowUnsigned || env["MAPLOADER_ALLOW_UNSIGNED"] == "1",
            addKeys: !addTrustKey.isEmpty)
        var deadlines = MapLoader.Configuration.Deadlines()
        if let stall = timeout ?? env["MAPLOADER_TIMEOUT"].flatMap(Double.init), stall > 0 { deadlines.stall = stall }
        let rate = (limitRate ?? env["MAPLOADER_LIMIT_RATE"]).flatMap(ByteFormat.parse).flatMap { $0 > 0 ? $0 : nil }
        let servers =
            server.isEmpty
            ? [env["MAPLOADER_SERVER"]].compactMap { $0 } + (env["MAPLOADER_MIRRORS"] ?? "").split(separator: " ").map(String.init)
            : server
        let threadCount: Int? = threads ?? env["MAPLOADER_THREADS"].flatMap(Int.init).flatMap { $0 > 0 ? $0 : nil }
        let chosen: MapLoader.Configuration.Transport = transport.flatMap(MapLoader.Configuration.Transport.init) ?? .standard
        let networks: NetworkPolicy = (network ?? env["MAPLOADER_NETWORK"]).flatMap(Self.networkPolicy) ?? .any
        return .init(
            server: servers.first, dataDirectory: URL(fileURLWithPath: directory),
            deadlines: deadlines, trust: trust, waitForLock: !noWait, maximumRate: rate,
            mirrors: Array(servers.dropFirst()), maximumThreads: threadCount, transport: chosen, network: networks)
    }

    /// Runs `body` with a loader whose events are rendered for a person (or silenced
    /// for `--json`), mapping failures to a one-line message and a documented exit code.
    /// - Parameter quiet: no progress either (errors are still printed).
    func withLoader<T: Sendable>(
        quiet: Bool = false,
        _ body: @escaping @Sendable (MapLoader) async throws -> T
    ) async throws -> T {
        let configuration = self.configuration
        let loader = MapLoader(configuration: configuration)
        let renderer = ProgressRenderer(quiet: json || quiet)
        let events = loader.events()
        let consumer = Task { await renderer.consume(events) }
        // Ctrl-C (or SIGTERM) cancels the operation (running or still queued), which cleans
        // up and changes nothing installed; the command then exits 130. A second one ends
        // the process.
        let operation = Task { try await body(loader) }
        let interrupts = InterruptWatcher { operation.cancel() }
        defer { interrupts.stop() }
        do {
            let value = try await operation.value
            loader.closeEventStreams()
            await consumer.value
            if !addTrustKey.isEmpty, let keys = try? await loader.trustedKeys() {
                Output.error("publisher keys trusted for this data directory: " + keys.map { "\($0.base64.prefix(12))…" }.joined(separator: ", "))
            }
            return value
        } catch let error as MapLoaderError {
            loader.closeEventStreams()
            await consumer.value
            throw Failure(error: error, json: json).exit()
        } catch {
            loader.closeEventStreams()
            await consumer.value
            throw error
        }
    }
}

/// A failed command: prints one line (and a JSON object with `--json`) and exits with the
/// code documented in `maploader --help`.
struct Failure: Error, CustomStringConvertible {
    let error: MapLoaderError
    let json: Bool

    /// The library's message with the command-line hint after it.
    var description: String { error.commandLineHint.map { "\(error); \($0)" } ?? "\(error)" }

    /// Prints the failure (stderr, plus a JSON object on stdout with `--json`) and returns
    /// the exit code to throw.
    func exit() -> ExitCode {
        Output.error("error: \(description)")
        if json { Output.json(ErrorJSON(error: description, exitCode: exitCode)) }
        return ExitCode(exitCode)
    }

    var exitCode: Int32 {
        switch error {
        case .storageFailed, .dataDirectoryRefused: return 1
        case .busy: return 10
        case .networkNotAllowed: return 11
        case .invalidParameters, .noServer: return 64
        case .unknownPackage, .unknownGroup, .requiredGroup, .notInstalled: return 4
        case .connectionFailed, .httpStatus: return 5
        case .integrityFailed, .invalidMetadata, .invalidArchive: return 6
        case .signatureRefused, .rollbackRefused: return 7
        case .insufficientSpace, .quotaExceeded: return 8
        case .versionUnavailable: return 9
        case .cancelled: return 130
        }
    }
}
