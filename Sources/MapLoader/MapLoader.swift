public import Foundation
import MapDelta
import MapModel
import MapPlanner
import MapPlatform
import MapStore
package import MapTransfer

/// Installs offline map packages and keeps them current.
///
/// One `MapLoader` owns one data directory. Operations that change it run one at a time, in
/// the order they are called; ``cancelCurrentOperation()`` stops the running one, leaving
/// the installed maps as they were. Reads (the tree, a package's status, locate, disk usage,
/// tags) never wait behind a running change: they answer at once from the installed version
/// and the catalog the data directory keeps, and see the new version once the change
/// commits. Progress and results reach the ``MapLoaderDelegate`` (one call at a time, in
/// event order, on the main actor by default) and every ``events()`` stream.
///
/// ```swift
/// let loader = MapLoader(configuration: .init(
///     server: "https://maps.example.com/site",
///     dataDirectory: URL(fileURLWithPath: "/var/maps"),
///     trust: TrustPolicy(keys: [publisherKey])))
/// try await loader.install(["de-berlin"])
/// let check = try await loader.checkForUpdate()
/// if check.updateAvailable { try await loader.performUpdate(strategy: .delta) }
/// ```
public actor MapLoader {
    /// Where maps come from and where they go.
    public struct Configuration: Sendable {
        /// The site: `http(s)://…`, `file://…` or a folder path; `nil` for offline use only.
        public var server: String?
        /// The folder maps go to when the app names none: Application Support/maploader on
        /// Apple platforms (in the app's container on iOS), the app's `no_backup` folder on
        /// Android, `$XDG_DATA_HOME/maploader` (else `~/.local/share/maploader`) on Linux.
        /// A data directory is kept out of the device's backups on Apple platforms (marked
        /// `isExcludedFromBackup`); Android's Auto Backup skips `no_backup`.
        public static var defaultDataDirectory: URL { StandardFolders.applicationData("maploader") }

        /// The data directory; readers find files at `<dir>/current/<package>/<group>/…`, or,
        /// to keep one version while updates commit (and on FAT and exFAT cards, where
        /// `current` is a file naming the live folder), through ``MapLoader/openSnapshot()``.
        public var dataDirectory: URL
        /// How failed requests are retried.
        public var retry: Retry
        /// When a silent, stalled or too slow server counts as failed.
        public var deadlines: Deadlines
        /// Publisher keys to trust (added to the data directory's saved keys), and whether
        /// unsigned catalogs are accepted.
        public var trust: TrustPolicy
        /// Whether an operation that changes the data directory waits while another process
        /// or loader changes it (reporting ``MapLoaderEvent/waitingForLock(pid:)``), or fails
        /// at once with ``MapLoaderError/busy(pid:)``.
        public var waitForLock: Bool
        /// The most bytes the data directory may hold; `nil` uses the quota saved in the
        /// data directory (``MapLoader/setQuota(_:)``), if any. An install or update whose
        /// peak would pass it is refused up front with ``MapLoaderError/quotaExceeded(quota:needed:largest:)``.
        public var quota: Int64?
        /// Other sites serving the same signed catalog (mirrors, CDNs): files come from
        /// whichever answers, failing over without fetching finished bytes again.
        public var mirrors: [String] = []
        /// Bytes per second that all of this loader's downloads together may use (for
        /// background updates, say); `nil` for no cap.
        public var maximumRate: Int64?
        /// Threads an update may use to rebuild compressed map files (gzip, zip, PBF, tile
        /// archives) after patching inside them, and to hash and write a large patched file
        /// while it decodes; the bytes are the same for any number. `nil` uses every core
        /// the device offers; 1 keeps a background update on one core.
        public var maximumThreads: Int?
        /// Where the delegate is called: on the main actor (the default), on the loader's
        /// own task, or isolated to an actor of yours. Calls come one at a time, in event order.
        public var delegateDelivery: DelegateDelivery = .mainActor
        /// The HTTP client for downloads: libcurl on Linux, Foundation's URLSession on
        /// Apple platforms and Android (see ``Transport/standard``).
        public var transport: Transport = .standard
        /// Which networks may carry downloads (``NetworkPolicy/any`` by default).
        public var network: NetworkPolicy = .any

        /// The threads a patch apply uses: ``maximumThreads`` (at least 1), else every core.
        var threads: Int { max(1, maximumThreads ?? ProcessInfo.processInfo.activeProcessorCount) }

        /// A configuration.
        public init(
            server: String?, dataDirectory: URL = Configuration.defaultDataDirectory, retry: Retry = .init(),
            deadlines: Deadlines = .init(), trust: TrustPolicy = .init(), waitForLock: Bool = true,
            quota: Int64? = nil, maximumRate: Int64? = nil, mirrors: [String] = [], maximumThreads: Int? = nil,
            delegateDelivery: DelegateDelivery = .mainActor, transport: Transport = .standard, network: NetworkPolicy = .any
        ) {
            self.network = network
            self.transport = transport
            self.delegateDelivery = delegateDelivery
            self.maximumThreads = maximumThreads
            self.server = server
            self.dataDirectory = dataDirectory
            self.retry = retry
            self.deadlines = deadlines
            self.trust = trust
            self.waitForLock = waitForLock
            self.quota = quota
            self.maximumRate = maximumRate
            self.mirrors = mirrors
        }
    }

    /// The configuration this loader was made with.
    public nonisolated let configuration: Configuration
    /// The data directory, as a writer sees it. An operation reads it through its
    /// ``OperationContext/store``, which for a reader is the generation it pinned.
    private let directory: Store
    let hub: EventHub
    /// The site's files, made once for the loader: a mirrored site keeps asking the mirror
    /// that last worked, and a host that answered once is retried when it drops; or why
    /// there is no site (none configured, an address that is not one).
    private let source: Result<any SiteSource, MapLoaderError>
    private var queueTail: Task<Void, Never>?
    private var tasks: [UUID: Task<any Sendable, any Error>] = [:]
    private var runningID: UUID?
    /// The operation running now (between its lock and its last event), if any.
    private var running: MapLoaderOperation?
    /// For the loader an ``OperationHandle``'s closure is given (``start(_:)``): the loader
    /// whose queue its operations join, and the handle they report to and pause with.
    let bound: (loader: MapLoader, handle: OperationBinding)?

    /// A loader for `configuration`. Nothing is read or written until the first operation.
    /// - Parameters:
    ///   - configuration: the site, the data directory, trust, retries and limits.
    ///   - weakDelegate: receives every event. The loader does **not** keep it alive (as
    ///     UIKit and AppKit delegates): keep a reference to it yourself. A delegate made in
    ///     the call (`MapLoader(configuration: c, weakDelegate: Printer())`) is gone at once,
    ///     receives nothing, and is reported once on standard error; ``events()`` streams
    ///     need no owner.
    public init(configuration: Configuration, weakDelegate: (any MapLoaderDelegate)? = nil) {
        self.init(configuration: configuration, delegate: weakDelegate, source: nil)
    }

    /// A loader whose site is `source` rather than ``Configuration/server`` (tests swap
    /// the network for a source of their own; `nil` reads the configuration).
    package init(configuration: Configuration, delegate: (any MapLoaderDelegate)? = nil, source: (any SiteSource)?) {
        self.bound = nil
        self.configuration = configuration
        self.directory = Store(root: configuration.dataDirectory)
        let hub = EventHub(delivery: configuration.delegateDelivery)
        self.hub = hub
        self.source = source.map { .success($0) } ?? Result { () throws(MapLoaderError) in try Self.siteSource(configuration, hub: hub) }
        hub.setDelegate(delegate)
        hub.attach(self)
    }

    /// `loader` bound to `handle`: the same data directory, site, events and queue; its
    /// operations report to the handle and pause with it.
    init(_ loader: MapLoader, boundTo handle: OperationBinding) {
        self.bound = (loader, handle)
        self.configuration = loader.configuration
        self.directory = loader.directory
        self.hub = loader.hub
        self.source = loader.source
    }

    deinit { if bound == nil { hub.finish() } }

    /// A stream of every event from now on; each call makes an independent stream.
    public nonisolated func events() -> AsyncStream<MapLoaderEvent> { hub.stream() }

    /// Ends every stream made by ``events()`` once its buffered events are read. Call it
    /// when done with the loader; later events reach only the delegate.
    public nonisolated func closeEventStreams() { hub.finish() }

    /// Sets the delegate. It is held **weakly**: keep a reference to it yourself, or it
    /// receives nothing once your last reference goes (reported once on standard error).
    public func setDelegate(_ delegate: (any MapLoaderDelegate)?) { hub.setDelegate(delegate) }

    /// Sets a delegate called on the reporting thread itself, before the operation goes on
    /// (held weakly): a seam for tests that hold an operation at a point (a gate at its
    /// first download, a disk filled mid-install, a pause a third of the way in), which
    /// the app's delegate, called in order on its own executor, cannot do.
    package func setSynchronousDelegate(_ delegate: (any MapLoaderDelegate)?) { hub.setSynchronousDelegate(delegate) }

    /// Cancels the running operation; it ends with ``MapLoaderError/cancelled`` and changes nothing.
    /// Queued operations still run.
    public func cancelCurrentOperation() {
        if let loader = bound?.loader {
            Task { await loader.cancelCurrentOperation() }
            return
        }
        if let runningID { tasks[runningID]?.cancel() }
    }

    /// Queues `body` behind every earlier operation and runs it with the operation's
    /// context, reporting start, finish or failure. With `reading`, an operation that
    /// changes the data directory runs as a reader this time (a dry run): a pinned
    /// generation instead of the write lock, so it works on a read-only data directory.
    /// A loader bound to a handle queues it on its loader, for the handle (`handle`).
    func enqueue<T: Sendable>(
        _ kind: MapLoaderOperation, reading: Bool = false, for handle: OperationBinding? = nil,
        _ body: @escaping @Sendable (isolated MapLoader, OperationContext) async throws -> T
    ) async throws(MapLoaderError) -> T {
        if let (loader, handle) = bound { return try await loader.enqueue(kind, reading: reading, for: handle, body) }
        if kind == .list, let change = running, change.changesDataDirectory, let value = try await readBeside(change, body) {
            return value
        }
        let id = UUID()
        let previous = queueTail
        let task = Task<any Sendable, any Error> {
            await previous?.value
            try Task.checkCancellation()
            return try await self.perform(id, kind, writes: kind.changesDataDirectory && !reading, for: handle, body)
        }
        tasks[id] = task
        queueTail = Task { _ = await task.result }
        let result = await withTaskCancellationHandler {
            await task.result
        } onCancel: {
            task.cancel()
        }
        tasks[id] = nil
        switch result {
        case .success(let value):
            return value as! T
        case .failure(let error):
            throw MapLoaderError(error)
        }
    }

    /// Takes the write lock (`writes`) or a lease, makes the context of `kind` and runs
    /// `body` with it; with a `handle`, its progress goes to the handle's monitor too, and
    /// the handle pauses and resumes its downloads (the site client's source is the
    /// handle's, ``SiteSource/controlled(by:)``).
    private func perform<T: Sendable>(
        _ id: UUID, _ kind: MapLoaderOperation, writes: Bool, for handle: OperationBinding?,
        _ body: @Sendable (isolated MapLoader, OperationContext) async throws -> T
    ) async throws -> T {
        runningID = id
        defer { (runningID, running) = (nil, nil) }
        hub.begin(kind, monitor: handle?.monitor)
        do {
            let directory = self.directory
            try directory.prepare()
            // Writers hold the write lock for the whole operation and clean up first; readers
            // pin the live generation so that a writer committing meanwhile removes nothing
            // they read (a copied `current` folder is first turned back into a link).
            var writeLock: FileLock?
            var recovered = CleanupReport(removed: [], freedBytes: 0)
            // A change waiting for the lock (another process writes) has reads answer beside
            // it already, unless the data directory needs the recovery that takes the lock.
            let whole = !directory.needsRecovery
            if whole { running = kind }
            if writes || !whole {
                let hub = self.hub
                writeLock = try await directory.lockForWriting(wait: configuration.waitForLock) { pid in
                    hub.emit(.waitingForLock(pid: pid.map(Int.init)))
                }
                recovered = try await offActor { try directory.recover() }
            }
            // From here reads answer beside this change (the data directory is recovered
            // and the change holds its lock).
            running = kind
            var lease: GenerationLease?
            if !writes {
                writeLock = nil
                lease = try directory.pinCurrent()
            }
            let store = directory.reading(lease)
            let site = source.map {
                SiteClient(
                    source: $0.controlled(by: handle?.control), cache: store.directory.manifestCache, scratch: store.directory.downloads)
            }
            var context = OperationContext(kind: kind, store: store, hub: hub, site: site, configuration: configuration, besideChange: nil)
            context.recovered = recovered
            let value = try await body(self, context)
            withExtendedLifetime((writeLock, lease)) {}
            await hub.end(kind, error: nil)
            return value
        } catch {
            await hub.end(kind, error: MapLoaderError(error))
            throw error
        }
    }

    /// Runs a read beside the running `change` instead of behind it: on the generation it
    /// pins now (the installed maps as they were before the change, until it commits), the
    /// catalog and manifests the data directory keeps, and no network (the change owns the
    /// site client, the manifest cache and the catalog it accepts). It reports no events:
    /// the streams and the delegate follow the change. `nil` when the data directory holds
    /// nothing to answer from (a first install before its catalog is kept): the read then
    /// waits behind the change.
    private func readBeside<T: Sendable>(
        _ change: MapLoaderOperation, _ body: @Sendable (isolated MapLoader, OperationContext) async throws -> T
    ) async throws(MapLoaderError) -> T? {
        do {
            let lease = try directory.pinCurrent()
            let context = OperationContext(
                kind: .list, store: directory.reading(lease), hub: EventHub.silent, site: .failure(.noServer),
                configuration: configuration, besideChange: change)
            let value = try await body(self, context)
            withExtendedLifetime(lease) {}
            return value
        } catch is NothingToReadBeside {
            return nil
        } catch {
            throw MapLoaderError(error)
        }
    }

    /// The site source `configuration` names: its server, failing over to its mirrors.
    private static func siteSource(_ configuration: Configuration, hub: EventHub) throws(MapLoaderError) -> any SiteSource {
        guard let server = configuration.server, !server.isEmpty else { throw .noServer }
        let limiter = configuration.maximumRate.map { RateLimiter(bytesPerSecond: $0) }
        let policy = configuration.network
        let transport = configuration.transport.make(policy: policy, dataDirectory: configuration.dataDirectory)
        let sources = try ([server] + configuration.mirrors).map { (address) throws(MapLoaderError) in
            try makeSiteSource(
                address, retry: RetryPolicy(configuration.retry), deadlines: TransferDeadlines(configuration.deadlines), limiter: limiter,
                transport: transport, policy: policy
            ) { event in
                switch event {
                case .lost(let url, let reason, let delay): hub.emit(.connectionLost(url: url, reason: reason, retryIn: delay))
                case .found(let url): hub.emit(.connectionFound(url: url))
                }
            }
        }
        guard sources.count > 1 else { return sources[0] }
        return MirroredSource(sources) { failed, reason, next in
            hub.emit(.connectionLost(url: failed, reason: "\(reason); trying mirror \(next)", retryIn: 0))
        }
    }

    /// Installed groups whose files no longer match their record, by `stat` (a walk of
    /// the installed trees, on the blocking threads).
    func quickCheck(_ state: InstalledState, in operation: OperationContext) async throws -> Set<Planner.GroupKey> {
        let store = operation.store
        return try await offActor { Set(StoreCheck.quick(store, state).map(\.key)) }
    }
}

extension MapLoaderOperation {
    /// Whether the operation changes the data directory (and so holds its write lock).
    var changesDataDirectory: Bool {
        switch self {
        case .install, .uninstall, .selectGroup, .deselectGroup, .update, .repair, .forgetKeys, .collectGarbage, .tag, .configure: true
        case .list, .planInstall, .checkForUpdate, .verify, .export: false
        }
    }
}
