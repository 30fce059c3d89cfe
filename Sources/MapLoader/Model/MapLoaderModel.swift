import Foundation
public import Observation

/// State an app binds its interface to: the package tree with every package's state, the
/// running operation's progress, and the last failure, kept current from the loader's own
/// progress and results on the main actor. SwiftUI views read it directly (it is
/// `@Observable`); UIKit and AppKit code uses `withObservationTracking`; code that is not UI
/// follows one package with ``states(of:)``.
///
/// ```swift
/// let model = MapLoaderModel(loader: loader)
/// await model.refresh()                  // the tree, from the site or offline
/// await model.install(["de-berlin"])     // model.activity follows it; model.pause() pauses it
/// if model.packages["de-berlin"]?.state == .installed { print("Berlin is ready offline") }
/// ```
///
/// The model runs one operation at a time, as the loader does; its methods return when
/// the operation ends, and a failure lands in ``lastError`` instead of being thrown.
@MainActor @Observable
public final class MapLoaderModel {
    /// The running operation, as a progress bar shows it.
    public struct Activity: Sendable, Hashable {
        /// Which operation runs.
        public var operation: MapLoader.Operation
        /// How far it has come, 0…1, never backwards.
        public var fraction: Double
        /// The phase it is in.
        public var phase: OperationProgress.Phase?
        /// What it works on, e.g. `de-berlin/base`.
        public var item: String?
        /// Whether it is paused (``MapLoaderModel/pause()``).
        public var isPaused: Bool
    }

    /// The loader the model drives.
    @ObservationIgnored public let loader: MapLoader
    /// The package tree as last read (``refresh()``, and after every operation).
    public private(set) var tree: PackageTree?
    /// Every package of ``tree`` by id.
    public private(set) var packages: [String: PackageStatus] = [:]
    /// The running operation; `nil` when none runs.
    public private(set) var activity: Activity?
    /// The last update check (``checkForUpdate()``).
    public private(set) var updateCheck: UpdateCheck?
    /// The last failure, cleared when the next operation starts.
    public private(set) var lastError: MapLoaderError?

    /// A pause asked for while no operation ran: the next one starts paused.
    @ObservationIgnored private var pauseNext = false
    @ObservationIgnored private var controls: (pause: @Sendable () -> Void, resume: @Sendable () -> Void, cancel: @Sendable () -> Void)?
    @ObservationIgnored private var followers: [UUID: (id: String, continuation: AsyncStream<PackageStatus>.Continuation)] = [:]
    /// Ends when the operation started last has ended: the next one waits for it.
    @ObservationIgnored private var queue: Task<Void, Never>?

    /// A model of `loader`; nothing is read until ``refresh()`` or an operation.
    public init(loader: MapLoader) {
        self.loader = loader
    }

    /// Reads the tree again (at once, even while an operation runs: reads never wait).
    public func refresh() async {
        do {
            let tree = try await loader.packageTree()
            self.tree = tree
            packages = Dictionary(tree.packages.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            for (_, follower) in followers {
                if let status = packages[follower.id] { follower.continuation.yield(status) }
            }
        } catch {
            lastError = error
        }
    }

    /// Installs packages (``MapLoader/install(_:)``).
    public func install(_ ids: [String]) async {
        await run(.install) { try await $0.install(ids) }
    }

    /// Uninstalls packages (``MapLoader/uninstall(_:)``).
    public func uninstall(_ ids: [String]) async {
        await run(.uninstall) { try await $0.uninstall(ids) }
    }

    /// Checks the site for a new version; the result is in ``updateCheck``.
    public func checkForUpdate() async {
        if let check = await run(.checkForUpdate, { try await $0.checkForUpdate() }) { updateCheck = check }
    }

    /// Updates the installed packages (``MapLoader/performUpdate(strategy:dryRun:)``).
    public func update(strategy: Plan.Strategy = .delta) async {
        await run(.update) { try await $0.performUpdate(strategy: strategy) }
        updateCheck = nil
    }

    /// Pauses the running operation's downloads (kept, resumed with `Range`). With none
    /// running yet (an operation started in a `Task` a moment ago), the next operation the
    /// model runs starts paused.
    public func pause() {
        pauseNext = controls == nil
        controls?.pause()
        activity?.isPaused = true
    }

    /// Resumes a paused operation (or lets the next one start unpaused).
    public func resume() {
        pauseNext = false
        controls?.resume()
        activity?.isPaused = false
    }

    /// Cancels the running operation; it ends with ``MapLoaderError/cancelled`` in
    /// ``lastError`` and changes nothing installed.
    public func cancel() { controls?.cancel() }

    /// The status of package `id` now (once the model has read the tree) and after every
    /// change the model sees, until the consumer stops iterating.
    public func states(of id: String) -> AsyncStream<PackageStatus> {
        let (stream, continuation) = AsyncStream<PackageStatus>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let key = UUID()
        followers[key] = (id, continuation)
        if let status = packages[id] { continuation.yield(status) }
        continuation.onTermination = { [weak self] _ in
            Task { @MainActor in self?.followers[key] = nil }
        }
        return stream
    }

    /// Runs one operation through a handle, following its progress in ``activity``; reads
    /// the tree again when it ends.
    @discardableResult
    private func run<Value: Sendable>(
        _ operation: MapLoader.Operation, _ body: @escaping @Sendable (MapLoader) async throws -> Value
    ) async -> Value? {
        // One operation at a time: a call made while one runs waits for it to end.
        let previous = queue
        let (turn, ended) = AsyncStream<Void>.makeStream()
        queue = Task { for await _ in turn {} }
        defer { ended.finish() }
        await previous?.value
        lastError = nil
        let handle = loader.start(body)
        if pauseNext { handle.pause() }
        controls = (handle.pause, handle.resume, handle.cancel)
        activity = Activity(operation: operation, fraction: 0, phase: nil, item: nil, isPaused: pauseNext)
        pauseNext = false
        let progress = handle.progress
        let follow = Task { @MainActor [weak self] in
            for await value in progress {
                guard let self, var activity = self.activity else { continue }
                (activity.fraction, activity.phase, activity.item) = (value.overallFraction, value.phase, value.item)
                self.activity = activity
            }
        }
        var result: Value?
        var failure: MapLoaderError?
        do {
            result = try await handle.value
        } catch {
            failure = error
        }
        await follow.value
        controls = nil
        activity = nil
        await refresh()
        if let failure { lastError = failure }  // the operation's failure, not the refresh's
        return result
    }
}
