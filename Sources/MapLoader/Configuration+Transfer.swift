import Foundation
import MapModel
import MapStore
import MapTransfer

extension MapLoader.Configuration {
    /// How often and how patiently a failed request is retried.
    public struct Retry: Sendable, Hashable {
        /// Attempts in all for one file, the first included (at least 1), however many
        /// requests the file takes (`URLSession`'s 8 MiB windows, a bandwidth cap's).
        public var attempts: Int
        /// Delay before the first retry, seconds; doubled each time, with ±50% jitter.
        public var initialDelay: Double
        /// Longest delay between attempts, seconds.
        public var maxDelay: Double

        /// A policy; the defaults try 6 times over about 6 seconds.
        public init(attempts: Int = 6, initialDelay: Double = 0.2, maxDelay: Double = 5) {
            self.attempts = max(1, attempts)
            self.initialDelay = initialDelay
            self.maxDelay = maxDelay
        }
    }

    /// How long a transfer may take before it counts as failed: a server that stops
    /// sending, dribbles bytes, or never answers ends in a clear error instead of a hang.
    ///
    /// Time the app's process did not run (the device asleep, the process stopped or
    /// starved for more than 5 seconds) does not count as the server's silence or slowness:
    /// a download goes on after the device wakes. ``total`` is wall-clock time.
    public struct Deadlines: Sendable, Hashable {
        /// Seconds without a byte (no response head, or no body bytes) before the attempt is given up.
        public var stall: Double
        /// The slowest acceptable rate, bytes per second, averaged over ``rateWindow``
        /// (like curl's `--speed-limit`); 0 switches the check off.
        public var minimumRate: Int64
        /// Seconds over which ``minimumRate`` is measured (like curl's `--speed-time`).
        public var rateWindow: Double
        /// Seconds one file may take in all, retries included; `nil` for no limit.
        public var total: Double?

        /// Deadlines; the defaults give up on 30 s of silence, on less than 1 kB/s over a
        /// minute, and on any one file after 6 hours.
        public init(stall: Double = 30, minimumRate: Int64 = 1024, rateWindow: Double = 60, total: Double? = 6 * 3600) {
            self.stall = stall
            self.minimumRate = minimumRate
            self.rateWindow = rateWindow
            self.total = total
        }
    }
}

extension MapLoader.Configuration {
    /// The HTTP client that carries a loader's downloads. Every transport meets the same
    /// pins, ranges, deadlines, retries, bandwidth cap and pause, with the same errors.
    public struct Transport: Sendable, Hashable, CustomStringConvertible {
        /// The transport's name: `curl` or `foundation`.
        public let name: String
        /// The background session Foundation's transport runs its downloads in, if any
        /// (``background(_:discretionary:)``).
        public let backgroundSession: BackgroundSession?

        /// libcurl: the default on Linux. It reads the network no faster than the disk
        /// takes the bytes, so a file comes in one request.
        public static let curl = Transport(name: "curl")
        /// Foundation's URLSession: the default on Apple platforms and Android, and on Linux
        /// through FoundationNetworking. Files come in `Range` windows of 8 MiB (URLSession
        /// does not slow the network to the disk's pace; a window bounds what it holds).
        public static let foundation = Transport(name: "foundation")

        /// The transports this build has: libcurl on Linux only, Foundation everywhere.
        public static var available: [Transport] { HTTPTransports.available.map { Transport(name: $0) } }

        /// This build's default: the transport `MAPLOADER_TRANSPORT` names in the
        /// environment, if this build has it (a test run, a command line), else libcurl
        /// where the build has it, else Foundation.
        public static var standard: Transport {
            if let named = ProcessInfo.processInfo.environment["MAPLOADER_TRANSPORT"].flatMap(Transport.init) { return named }
            return available[0]
        }

        /// Foundation's URLSession with download tasks in the background session
        /// `identifier`: on Apple platforms the system carries on with a download while the
        /// app is suspended or not running, and relaunches the app in the background when it
        /// ends (see ``MapLoader/handleEventsForBackgroundURLSession(_:completionHandler:)``).
        /// A download that ended while no request waited for it (the app away, a pause) is
        /// kept in the data directory and used by the request that asks for the same bytes,
        /// so none is fetched twice.
        ///
        /// One configuration (one data directory) per identifier in an app: the first loader
        /// of an identifier in a process makes its session. With `discretionary` the system
        /// may wait for a good moment (power, Wi-Fi) to run the downloads: for updates the
        /// user did not ask for just now. Each task is one 8 MiB window of a file; while the
        /// app is away, the window in flight of each file goes on. A pause lets those
        /// windows finish and keeps them for the resume. Where the system has no background
        /// sessions (Linux, Android) this is ``foundation``: its data tasks resume a dropped
        /// file at the byte it stopped at.
        public static func background(_ identifier: String, discretionary: Bool = false) -> Transport {
            Transport(name: "foundation", backgroundSession: BackgroundSession(identifier: identifier, discretionary: discretionary))
        }

        /// The transport called `name` (`curl`, `foundation`), or `nil` when this build does not have it.
        public init?(_ name: String) {
            guard HTTPTransports.available.contains(name) else { return nil }
            self.name = name
            backgroundSession = nil
        }

        private init(name: String, backgroundSession: BackgroundSession? = nil) {
            self.name = name
            self.backgroundSession = backgroundSession
        }

        /// The transport's name, as `--transport` takes it (and its background session's identifier).
        public var description: String { backgroundSession.map { "\(name) (background session '\($0.identifier)')" } ?? name }

        /// The transfer layer's transport for a loader of `dataDirectory` on networks `policy` allows.
        func make(policy: NetworkPolicy, dataDirectory: URL) -> any HTTPTransport {
            let background = backgroundSession.map {
                FoundationDownloadTransport.Background(identifier: $0.identifier, discretionary: $0.discretionary)
            }
            return HTTPTransports.named(
                name, policy: policy, background: background, stash: DataDirectory(dataDirectory).backgroundDownloads)
                ?? HTTPTransports.standard
        }
    }

    /// A background `URLSession` that carries a loader's downloads
    /// (``Transport/background(_:discretionary:)``).
    public struct BackgroundSession: Sendable, Hashable {
        /// The session's identifier, as the system gives it back to the app delegate.
        public var identifier: String
        /// Whether the system may wait for a good moment (power, Wi-Fi) to run the downloads.
        public var discretionary: Bool

        /// A background session.
        public init(identifier: String, discretionary: Bool = false) {
            self.identifier = identifier
            self.discretionary = discretionary
        }
    }
}

extension RetryPolicy {
    /// The transfer layer's copy of `retry`.
    package init(_ retry: MapLoader.Configuration.Retry) {
        self.init(attempts: retry.attempts, initialDelay: retry.initialDelay, maxDelay: retry.maxDelay)
    }
}

extension TransferDeadlines {
    /// The transfer layer's copy of `deadlines`.
    package init(_ deadlines: MapLoader.Configuration.Deadlines) {
        self.init(
            stall: deadlines.stall, minimumRate: deadlines.minimumRate, rateWindow: deadlines.rateWindow, total: deadlines.total,
            suspension: TransferDeadlines.clientSuspension)
    }
}
