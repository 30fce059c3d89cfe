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
        let (stamped, monitor) = tracker.stamp(progress)
        deliver(.progress(stamped))
        monitor?.receive(stamped)
    }

    private func deliver(_ event: MapLoaderEvent) {
        for continuation in streams.withLock({ Array($0.values) }) { continuation.yield(event) }
        guard let target = delegate.withLock({ $0.value }) else { return }
        switch event {
        case .progress(let progress): target.mapLoader(didUpdateProgress: progress)
        case .installed(let ids): target.mapLoader(didInstallPackages: ids)
        case .uninstalled(let ids): target.mapLoader(didUninstallPackages: ids)
        case .updateChecked(let check): target.mapLoader(didFindUpdate: check)
        case .updated(let report): target.mapLoader(didUpdate: report)
        case .failed(let operation, let error): target.mapLoader(didFail: operation, error: error)
        case .connectionLost(let url, let reason, _): target.mapLoaderDidLoseConnection(url: url, reason: reason)
        case .connectionFound(let url): target.mapLoaderDidFindConnection(url: url)
        default: break
        }
        target.mapLoader(didReceive: event)
    }

    /// Ends every stream (the loader is going away).
    func finish() {
        for continuation in streams.withLock({ Array($0.values) }) { continuation.finish() }
    }
}
