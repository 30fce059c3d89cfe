import Dispatch
import Foundation
import Synchronization

/// Blocking work started on a thread of its own (never Swift's cooperative pool), whose
/// result a synchronous caller takes later with ``wait()``, or leaves: a job no one waits
/// for runs to its end and its result is dropped.
///
/// The publisher uses it to make two trials of one large file on two cores at once.
package final class BackgroundJob<Value: Sendable>: Sendable {
    private let result = Mutex<Result<Value, any Error>?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts `work` on a new thread.
    package init(_ work: @escaping @Sendable () throws -> Value) {
        Thread { [self] in
            let outcome = Result { try work() }
            result.withLock { $0 = outcome }
            finished.signal()
        }.start()
    }

    /// A job that is already done, with `value`: for callers that choose at run time
    /// whether to make something on another thread.
    package init(done value: Value) {
        result.withLock { $0 = .success(value) }
        finished.signal()
    }

    /// Whether the work has ended.
    package var isFinished: Bool { result.withLock { $0 != nil } }

    /// Blocks until the work has ended and returns its value or throws its error; may be
    /// called again (and from any thread) for the same outcome.
    package func wait() throws -> Value {
        if let outcome = result.withLock({ $0 }) { return try outcome.get() }
        finished.wait()
        finished.signal()  // a later call, or another thread's, gets through too
        return try result.withLock { $0! }.get()
    }
}
