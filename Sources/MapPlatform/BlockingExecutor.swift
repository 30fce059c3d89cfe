import Foundation
import Synchronization

/// Dedicated threads for blocking work: hashing, extraction, patching, fsync and directory
/// walks. Swift's cooperative pool has one thread per core (two on a small phone or CI
/// machine); blocking it starves every other task of the app. Work sent here runs as a Task
/// whose executor preference is these threads, so `Task.isCancelled` and cancellation work
/// as usual while the pool stays free.
package final class BlockingExecutor: TaskExecutor, Sendable {
    /// The executor MapLoader's blocking work runs on.
    package static let shared = BlockingExecutor(threads: 3)

    /// Jobs waiting for a thread, and the condition the threads sleep on.
    private let queue = Mutex<[UnownedJob]>([])
    private let wakeUp = NSCondition()

    package init(threads: Int) {
        for index in 0..<threads {
            let thread = Thread { [self] in self.work() }
            thread.name = "MapLoader blocking \(index)"
            thread.start()
        }
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        queue.withLock { $0.append(unowned) }
        wakeUp.lock()
        wakeUp.signal()
        wakeUp.unlock()
    }

    /// A thread's loop: run jobs as they come, sleep while there are none.
    private func work() {
        while true {
            wakeUp.lock()
            var job = queue.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            while job == nil {
                wakeUp.wait()
                job = queue.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            }
            wakeUp.unlock()
            job?.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Runs blocking work on ``BlockingExecutor``'s dedicated threads, never on the cooperative
/// pool; cancelling the caller cancels the work, which polls `Task.isCancelled`.
package func offActor<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    let task = Task(executorPreference: BlockingExecutor.shared) { try work() }
    return try await withTaskCancellationHandler {
        try await task.value
    } onCancel: {
        task.cancel()
    }
}
