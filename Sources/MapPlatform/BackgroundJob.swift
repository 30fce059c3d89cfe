import CPlatform
import Dispatch
import Foundation
import Synchronization

/// Blocking work started on a thread of its own (never Swift's cooperative pool), whose
/// result a synchronous caller takes later with ``wait()``, or leaves: a job no one waits
/// for runs to its end and its result is dropped. Work that looks at the `stopped` it is
/// given ends early once ``stop()`` is called.
///
/// The publisher uses it to make two trials of one large file on two cores at once.
package final class BackgroundJob<Value: Sendable>: Sendable {
    private let result = Mutex<(outcome: Result<Value, any Error>, seconds: Double)?>(nil)
    private let finished = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)

    /// Starts `work` on a new thread.
    package convenience init(_ work: @escaping @Sendable () throws -> Value) {
        self.init(stoppable: { _ in try work() })
    }

    /// Starts `work` on a new thread, giving it `stopped`, which says whether ``stop()`` was
    /// called: work that can end early asks it now and then and throws (a
    /// `CancellationError`) once it is true. With `idle`, the thread has the lowest
    /// scheduling priority (``lowerThisThreadsPriority()``): it takes a core only where no
    /// other work of the machine wants it.
    package init(idle: Bool = false, stoppable work: @escaping @Sendable (_ stopped: @escaping @Sendable () -> Bool) throws -> Value) {
        Thread { [self] in
            if idle { Self.lowerThisThreadsPriority() }
            let start = ContinuousClock.now
            let outcome = Result { try work { self.stopping.load(ordering: .relaxed) } }
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

    /// Asks the work to end early, where it asks (``init(idle:stoppable:)``); ``wait()``
    /// then gives what it ended with: its value where it had already ended.
    package func stop() { stopping.store(true, ordering: .relaxed) }

    /// Gives the calling thread the lowest scheduling priority, on Linux and Android (nice
    /// 19 for that thread alone); elsewhere it keeps its priority.
    package static func lowerThisThreadsPriority() {
        #if os(Linux) || os(Android)
            _ = cplatform_lower_thread_priority()
        #endif
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
