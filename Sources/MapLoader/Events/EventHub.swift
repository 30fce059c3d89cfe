import Foundation
import MapDelta
import MapModel
import MapPlanner
import MapPlatform
import MapStore
import MapTransfer
import Synchronization

/// Fans events out to the delegate and to every open stream, in order.
final class EventHub: Sendable {
    /// The open streams; its lock also orders events: the streams and the delegate's queue
    /// get each event in one step, so both see one order.
    private let streams = Mutex([UUID: AsyncStream<MapLoaderEvent>.Continuation]())
    private let tracker = ProgressTracker()
    private let delegate: DelegateSlot
    /// A delegate called on the reporting thread itself, before the operation goes on: a
    /// seam for tests that hold an operation at a point (``MapLoader/setSynchronousDelegate(_:)``).
    private let synchronous = DelegateSlot()
    /// Calls the delegate in event order, on the executor the configuration names.
    private let calls: DelegateQueue

    /// A hub calling its delegate as `delivery` says.
    init(delivery: MapLoader.DelegateDelivery = .background) {
        let slot = DelegateSlot()
        delegate = slot
        calls = DelegateQueue(delivery: delivery, present: { slot.isSet }, call: { slot.call($0) })
    }

    deinit { calls.finish() }

    /// A hub that nobody hears: for a read answered beside a running change, whose progress
    /// must not mix into the change's.
    static let silent = EventHub()

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
    /// then `.finished` or `.failed`. Returns once the delegate has been handed that last event.
    func end(_ operation: MapLoaderOperation, error: MapLoaderError?) async {
        let (last, monitor) = tracker.finish(operation, succeeded: error == nil)
        if let last {
            deliver(.progress(last))
            monitor?.receive(last)
            synchronous.call(.progress(last))
        }
        let final: MapLoaderEvent = error.map { .failed(operation, $0) } ?? .finished(operation)
        let number = deliver(final)
        synchronous.call(final)
        await calls.waitUntilCalled(number)
    }

    func setDelegate(_ newValue: (any MapLoaderDelegate)?) { delegate.set(newValue) }

    func setSynchronousDelegate(_ newValue: (any MapLoaderDelegate)?) { synchronous.set(newValue) }

    /// Names the loader the delegates' calls come from.
    func attach(_ loader: MapLoader) {
        delegate.attach(loader)
        synchronous.attach(loader)
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
        guard case .progress(let progress) = event else {
            deliver(event)
            synchronous.call(event)
            return
        }
        // Threads report at once (downloads, unpacking); stamping and handing to the streams,
        // the delegate's queue and the handle happen in one step, so they all see the
        // fraction in the order it grew.
        let stamped = tracker.stamp(progress) { stamped, monitor in
            self.deliver(.progress(stamped))
            monitor?.receive(stamped)
        }
        synchronous.call(.progress(stamped))
    }

    /// Hands `event` to every stream and queues it for the delegate, in one step; returns its
    /// number in the delegate's queue.
    @discardableResult
    private func deliver(_ event: MapLoaderEvent) -> UInt64 {
        streams.withLock { streams in
            for continuation in streams.values { continuation.yield(event) }
            return calls.enqueue(event)
        }
    }

    /// Ends every stream (the loader is going away, or the app closed them); the delegate
    /// still gets later events.
    func finish() {
        for continuation in streams.withLock({ Array($0.values) }) { continuation.finish() }
    }
}

/// The delegate (held weakly) and the loader it hears from, and the call that hands it an
/// event. A delegate released while set is reported once on standard error: an app that
/// made it in the call (`weakDelegate: Printer()`) would otherwise hear nothing, silently.
final class DelegateSlot: Sendable {
    private struct WeakDelegate {
        weak var value: (any MapLoaderDelegate)?
        /// The loader the delegate hears from (weak: the loader owns the hub).
        weak var loader: MapLoader?
        /// Whether a delegate was set (and not unset since), and whether its release was reported.
        var set = false
        var reported = false
    }

    private let slot = Mutex(WeakDelegate())
    /// Where a released delegate is reported (standard error; a test passes its own).
    private let report: @Sendable (String) -> Void

    init(report: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }) {
        self.report = report
    }

    /// The line that reports a delegate released while set.
    static let releasedMessage =
        "MapLoader: the delegate was released while set, so it hears nothing; the loader holds it weakly: "
        + "keep a reference to it (or use events())"

    func set(_ delegate: (any MapLoaderDelegate)?) {
        slot.withLock {
            $0.value = delegate
            ($0.set, $0.reported) = (delegate != nil, false)
        }
    }

    func attach(_ loader: MapLoader) { slot.withLock { $0.loader = loader } }

    /// Whether a delegate is there to call.
    var isSet: Bool { slot.withLock { $0.value != nil && $0.loader != nil } }

    func call(_ event: MapLoaderEvent) {
        let (target, loader, released) = slot.withLock { slot in
            let released = slot.set && slot.value == nil && slot.loader != nil && !slot.reported
            if released { slot.reported = true }
            return (slot.value, slot.loader, released)
        }
        if released { report(Self.releasedMessage) }
        guard let target, let loader else { return }
        target.mapLoader(loader, didReceive: event)
    }
}
