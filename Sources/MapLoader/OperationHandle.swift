import MapModel
import MapTransfer

/// One operation started with ``MapLoader/start(_:)``: cancel it, pause and resume its
/// downloads, and await its result.
///
/// Pausing ends every request in flight at once and keeps the partial files; ``resume()``
/// continues each file with `Range` where it stopped, so no byte is downloaded twice.
/// While paused the operation keeps its place (and, for a change, the data directory's
/// write lock): pause for a moment, such as while the user starts navigation, and cancel
/// to give the place up. A cancelled operation changes nothing installed and keeps its
/// partial downloads for the next try.
///
/// Its progress is one number that never goes backwards, for a bar:
///
/// ```swift
/// let install = loader.start { try await $0.install(["de-berlin"]) }
/// for await progress in install.progress {
///     updateBar(progress.overallFraction)      // 0…1, across every group and phase
/// }
/// let report = try await install.value
/// ```
public final class OperationHandle<Value: Sendable>: Sendable {
    private let task: Task<Value, any Error>
    private let binding: OperationBinding
    private var control: TransferControl { binding.control }
    private var monitor: OperationMonitor { binding.monitor }

    init(task: Task<Value, any Error>, binding: OperationBinding) {
        self.task = task
        self.binding = binding
    }

    /// The progress of the operation from now on, starting with the latest; it ends when
    /// the operation does. Each value's ``OperationProgress/overallFraction`` never goes
    /// backwards within one operation (a handle whose closure runs several operations
    /// reports each from 0 to 1, told apart by ``OperationProgress/operationID``).
    public var progress: AsyncStream<OperationProgress> { monitor.stream() }

    /// The latest progress, or `nil` before the operation has reported any.
    public var latestProgress: OperationProgress? { monitor.latest }

    /// How far the operation has come, 0…1 (the latest ``OperationProgress/overallFraction``).
    public var fractionCompleted: Double { monitor.latest?.overallFraction ?? 0 }

    /// Cancels the operation; ``value`` then throws ``MapLoaderError/cancelled`` and nothing
    /// installed changed. A change already committing (its new version switched in with one
    /// rename) is not undone: ``value`` then returns its report, which an app shows as done.
    public func cancel() { task.cancel() }

    /// Stops the operation's downloads, keeping what they received.
    public func pause() { control.pause() }

    /// Continues the operation's downloads where they stopped.
    public func resume() { control.resume() }

    /// Whether the operation's downloads are paused.
    public var isPaused: Bool { control.isPaused }

    /// Downloads running right now: none shortly after ``pause()``.
    var requestsInFlight: Int { control.requestsInFlight }

    /// The operation's result, once it has finished.
    public var value: Value {
        get async throws(MapLoaderError) {
            do {
                return try await task.value
            } catch let error as MapLoaderError {
                throw error
            } catch {
                throw MapLoaderError(error)
            }
        }
    }
}

extension MapLoader {
    /// Starts an operation and returns its handle at once, for apps that pause, resume or
    /// cancel one operation (rather than ``cancelCurrentOperation()``):
    ///
    /// ```swift
    /// let install = loader.start { try await $0.install(["de-berlin"]) }
    /// install.pause()      // the user started navigation
    /// install.resume()     // continues with Range, nothing fetched twice
    /// let report = try await install.value
    /// ```
    /// Operations still run one at a time: a started operation waits for the one running.
    ///
    /// The closure is given this loader bound to the handle: operations called on it (`$0`)
    /// join this loader's queue, report to the handle and pause with it. (Operations
    /// called on another reference to the loader inside the closure run as usual, without
    /// the handle.)
    public nonisolated func start<Value: Sendable>(
        _ operation: @escaping @Sendable (MapLoader) async throws -> Value
    ) -> OperationHandle<Value> {
        let binding = OperationBinding()
        let loader = MapLoader(bound?.loader ?? self, boundTo: binding)
        let task = Task<Value, any Error> {
            defer { binding.monitor.finish() }
            return try await operation(loader)
        }
        return OperationHandle(task: task, binding: binding)
    }
}

/// What an ``OperationHandle`` gives the operations it runs: the control that pauses and
/// resumes their downloads and the monitor their progress goes to. It travels with each
/// operation as a value (``MapLoader`` bound to it, the operation's site client, the
/// event hub's tracker), never as task-local state.
struct OperationBinding: Sendable {
    let control = TransferControl()
    let monitor = OperationMonitor()
}
