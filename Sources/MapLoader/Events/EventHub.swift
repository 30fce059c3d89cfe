import Foundation
import Synchronization
import MapModel
import MapPlanner
import MapDelta
import MapStore
import MapTransfer
import MapPlatform

/// Fans events out to the delegate and to every open stream, in order.
final class EventHub: Sendable {
    private struct WeakDelegate {
        weak var value: (any MapLoaderDelegate)?
        /// The loader the delegate hears from (weak: the loader owns this hub).
        weak var loader: MapLoader?
    }

    private let delegate = Mutex(WeakDelegate())
    private let streams = Mutex([UUID: AsyncStream<MapLoaderEvent>.Continuation]())
    private let tracker = ProgressTracker()

    /// Starts an operation: numbers it and follows its overall progress (also for the
    /// handle `monitor` belongs to, if any), then reports `.started`.
    func begin(_ operation: MapLoaderOperation, monitor: OperationMonitor?) {
        tracker.begin(monitor: monitor)
        emit(.started(operation))
    }

    /// Sends a progress event of `operation` (stamped with its number and overall fraction).
    func progress(
        _ operation: MapLoaderOperation, _ phase: OperationPhase, bytes: Int64 = 0, total: Int64 = 0,
        items: Int = 0, totalItems: Int = 0, item: String? = nil
    ) {
        emit(
            .progress(
                OperationProgress(
                    operation: operation, phase: phase, completedBytes: bytes, totalBytes: total,
                    completedItems: items, totalItems: totalItems, item: item)))
    }

    /// Declares bytes of work of the running operation (see ``ProgressTracker``).
    func addWork(_ bytes: Int64) { tracker.addWork(bytes) }

    /// Ends an operation: a last progress event at 1 when it succeeded and reported any,
    /// then `.finished` or `.failed`.
    func end(_ operation: MapLoaderOperation, error: MapLoaderError?) {
        let (last, monitor) = tracker.finish(operation, succeeded: error == nil)
        if let last { deliver(.progress(last)) }
        if let last { monitor?.receive(last) }
        emit(error.map { .failed(operation, $0) } ?? .finished(operation))
    }

    func setDelegate(_ newValue: (any MapLoaderDelegate)?) {
        delegate.withLock { $0.value = newValue }
    }

    /// Names the loader the delegate's calls come from.
    func attach(_ loader: MapLoader) {
        delegate.withLock { $0.loader = loader }
    }

    /// A new stream that receives every event from now on.
    func stream() -> AsyncStream<MapLoaderEvent> {
        let (stream, continuation) = AsyncStream<MapLoaderEvent>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        let id = UUID()
        streams.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.streams.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }

    func emit(_ event: MapLoaderEvent) {
        guard case .progress(let progress) = event else { return deliver(event) }
        // Threads report at once (downloads, unpacking); stamping and handing to the streams
        // and the handle happen in one step, so they see the fraction in the order it grew.
        let stamped = tracker.stamp(progress) { stamped, monitor in
            self.yieldToStreams(.progress(stamped))
            monitor?.receive(stamped)
        }
        notifyDelegate(.progress(stamped))
    }

    private func yieldToStreams(_ event: MapLoaderEvent) {
        for continuation in streams.withLock({ Array($0.values) }) { continuation.yield(event) }
    }

    private func deliver(_ event: MapLoaderEvent) {
        yieldToStreams(event)
        notifyDelegate(event)
    }

    private func notifyDelegate(_ event: MapLoaderEvent) {
        let (target, loader) = delegate.withLock { ($0.value, $0.loader) }
        guard let target, let loader else { return }
        switch event {
        case .progress(let progress): target.mapLoader(loader, didUpdateProgress: progress)
        case .installed(let ids): target.mapLoader(loader, didInstallPackages: ids)
        case .uninstalled(let ids): target.mapLoader(loader, didUninstallPackages: ids)
        case .updateChecked(let check): target.mapLoader(loader, didFindUpdate: check)
        case .updated(let report): target.mapLoader(loader, didUpdate: report)
        case .failed(let operation, let error): target.mapLoader(loader, didFail: operation, error: error)
        case .connectionLost(let url, let reason, _): target.mapLoader(loader, didLoseConnectionTo: url, reason: reason)
        case .connectionFound(let url): target.mapLoader(loader, didFindConnectionTo: url)
        default: break
        }
        target.mapLoader(loader, didReceive: event)
    }

    /// Ends every stream (the loader is going away).
    func finish() {
        for continuation in streams.withLock({ Array($0.values) }) { continuation.finish() }
    }
}
