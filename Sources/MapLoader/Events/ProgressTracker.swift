import Foundation
import Synchronization

/// Turns the per-phase progress of the running operation into one overall fraction that
/// never goes backwards, and numbers operations. A loader runs one operation at a time, so
/// one tracker per loader follows the current one.
///
/// An operation with a plan (install, update, group changes) declares its work in bytes:
/// what it downloads plus what it unpacks or patches (a chain of patches counts once per
/// patch). Progress events then count: downloads by the transfer ledger's bytes (already
/// summed over every blob), unpacking and patching by the latest bytes of each group,
/// banked when a chain's next patch starts again from zero. Operations without a plan go by
/// their items. Resolving is the first 2 %, committing the last 1 %.
final class ProgressTracker: Sendable {
    private struct Run {
        var id: Int
        var work: Int64 = 0
        var downloaded: Int64 = 0
        var produced: [String: Int64] = [:]
        var banked: Int64 = 0
        var overall: Double = 0
        var reported = false
        var monitor: OperationMonitor?
    }

    private struct State {
        var lastID = 0
        var run: Run?
    }

    private let state = Mutex(State())

    /// Starts numbering and tracking a new operation; progress reaches `monitor` too.
    func begin(monitor: OperationMonitor?) {
        state.withLock { state in
            state.lastID += 1
            state.run = Run(id: state.lastID, monitor: monitor)
        }
    }

    /// The bytes of work the operation's plan declares (added to any declared before, e.g.
    /// a full archive fetched after a patch failed).
    func addWork(_ bytes: Int64) {
        state.withLock { $0.run?.work += max(0, bytes) }
    }

    /// `progress` stamped with the operation's number and overall fraction; `deliver` gets it
    /// and the monitor to hand it to while the tracker is still locked, so concurrent
    /// reporters deliver in the order the fraction grew.
    func stamp(
        _ progress: OperationProgress, deliver: (OperationProgress, OperationMonitor?) -> Void
    ) -> OperationProgress {
        state.withLock { state in
            guard var run = state.run else {
                deliver(progress, nil)
                return progress
            }
            var stamped = progress
            stamped.operationID = run.id
            let computed = Self.overall(of: progress, run: &run)
            run.overall = min(1, max(run.overall, computed))
            run.reported = true
            stamped.overallFraction = run.overall
            state.run = run
            deliver(stamped, run.monitor)
            return stamped
        }
    }

    /// The operation's last progress event (overall 1) if it reported any, and ends it.
    func finish(_ operation: MapLoaderOperation, succeeded: Bool) -> (OperationProgress?, OperationMonitor?) {
        state.withLock { state in
            defer { state.run = nil }
            guard let run = state.run, run.reported, succeeded else { return (nil, state.run?.monitor) }
            let last = OperationProgress(
                operation: operation, phase: operation.changesDataDirectory ? .commit : .verify,
                completedItems: 1, totalItems: 1, operationID: run.id, overallFraction: 1)
            return (last, run.monitor)
        }
    }

    private static func overall(of progress: OperationProgress, run: inout Run) -> Double {
        guard run.work > 0 else {
            // No plan: the phase's own fraction is the operation's.
            return progress.phase == .resolve ? 0 : progress.fraction
        }
        switch progress.phase {
        case .resolve: return 0.01
        case .commit: return 0.99
        case .verify: break
        case .download: run.downloaded = max(run.downloaded, progress.completedBytes)
        case .extract, .patch:
            let key = "\(progress.phase.rawValue) \(progress.item ?? "")"
            let last = run.produced[key] ?? 0
            if progress.completedBytes < last { run.banked += last }  // a chain's next patch
            run.produced[key] = progress.completedBytes
        }
        let done = run.downloaded + run.banked + run.produced.values.reduce(0, +)
        return 0.02 + 0.97 * min(1, Double(done) / Double(run.work))
    }
}

/// The progress of the operations one ``OperationHandle`` runs, for its
/// ``OperationHandle/progress`` stream and ``OperationHandle/fractionCompleted``.
final class OperationMonitor: Sendable {
    private struct State {
        var latest: OperationProgress?
        var continuations: [UUID: AsyncStream<OperationProgress>.Continuation] = [:]
        var finished = false
    }

    private let state = Mutex(State())

    /// The latest progress.
    var latest: OperationProgress? { state.withLock { $0.latest } }

    func receive(_ progress: OperationProgress) {
        let targets = state.withLock { state in
            state.latest = progress
            return Array(state.continuations.values)
        }
        for continuation in targets { continuation.yield(progress) }
    }

    /// A stream of the progress from now on (beginning with the latest), ending when the
    /// handle's task does.
    func stream() -> AsyncStream<OperationProgress> {
        let (stream, continuation) = AsyncStream<OperationProgress>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let id = UUID()
        let (latest, finished) = state.withLock { state in
            if !state.finished { state.continuations[id] = continuation }
            return (state.latest, state.finished)
        }
        if let latest { continuation.yield(latest) }
        if finished {
            continuation.finish()
        } else {
            continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) } }
        }
        return stream
    }

    /// Ends every stream: the handle's task is over.
    func finish() {
        let targets = state.withLock { state in
            state.finished = true
            defer { state.continuations = [:] }
            return Array(state.continuations.values)
        }
        for continuation in targets { continuation.finish() }
    }
}
