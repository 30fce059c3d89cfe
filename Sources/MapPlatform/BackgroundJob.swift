import Dispatch
import Foundation
import Synchronization

/// Blocking work started on a thread of its own (never Swift's cooperative pool), whose
/// result a synchronous caller takes later with ``wait()``, or leaves: a job no one waits
/// for runs to its end and its result is dropped.
///
/// The publisher uses it to make two trials of one large file on two cores at once.
package final class BackgroundJob<Value: Sendable>: Sendable {
    private let result = Mutex<(outcome: Result<Value, any Error>, seconds: Double)?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts `work` on a new thread.
    package init(_ work: @escaping @Sendable () throws -> Value) {
        Thread { [self] in
            let start = ContinuousClock.now
            let outcome = Result { try work() }
            let elapsed = ContinuousClock.now - start
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            result.withLock { $0 = (outcome, seconds) }
            finished.signal()
        }.start()
    }

    /// A job that is already done, with `value`, which took `seconds`: for callers that
    /// choose at run time whether to make something on another thread.
    package init(done value: Value, seconds: Double = 0) {
        result.withLock { $0 = (.success(value), seconds) }
        finished.signal()
    }

    /// The wall seconds the work took, once it has ended (``wait()``).
    package var seconds: Double { result.withLock { $0?.seconds ?? 0 } }

    /// Whether the work has ended.
    package var isFinished: Bool { result.withLock { $0 != nil } }

    /// Blocks until the work has ended and returns its value or throws its error; may be
    /// called again (and from any thread) for the same outcome.
    package func wait() throws -> Value {
        if let ended = result.withLock({ $0 }) { return try ended.outcome.get() }
        finished.wait()
        finished.signal()  // a later call, or another thread's, gets through too
        return try result.withLock { $0! }.outcome.get()
    }
}
