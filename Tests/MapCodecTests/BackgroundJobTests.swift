import Dispatch
import Foundation
import MapPlatform
import MapTestSupport
import Synchronization
import Testing

/// ``BackgroundJob``: blocking work on a thread of its own, whose outcome every waiter gets.
@Suite struct BackgroundJobTests {
    struct Refused: Error, Equatable {}

    @Test func everyWaiterGetsTheValueOnceTheWorkEnds() async throws {
        let gate = DispatchSemaphore(value: 0)
        let runs = Atomic<Int>(0)
        let job = BackgroundJob<Int> {
            gate.wait()
            runs.add(1, ordering: .relaxed)
            return 42
        }
        #expect(!job.isFinished)
        // Two waiters on threads of their own, blocked until the work is let go.
        async let first = RawThread.value { try job.wait() }
        async let second = RawThread.value { try job.wait() }
        gate.signal()
        #expect(try await first == 42)
        #expect(try await second == 42)
        #expect(job.isFinished)
        #expect(try job.wait() == 42)  // and again, after the end
        #expect(runs.load(ordering: .relaxed) == 1)
        #expect(job.seconds >= 0)
    }

    @Test func theWorksErrorIsThrownToEveryWaiter() throws {
        let job = BackgroundJob<Int> { throw Refused() }
        #expect(throws: Refused.self) { try job.wait() }
        #expect(throws: Refused.self) { try job.wait() }
        #expect(job.isFinished)
    }

    @Test func aJobMadeDoneHasItsValueAndSeconds() throws {
        let job = BackgroundJob<String?>(done: "made here", seconds: 1.5)
        #expect(job.isFinished)
        #expect(try job.wait() == "made here")
        #expect(job.seconds == 1.5)
    }

    @Test func theWorkRunsOffTheCallersThread() throws {
        let caller = pthread_self()
        let job = BackgroundJob<Bool> { pthread_equal(pthread_self(), caller) == 0 }
        #expect(try job.wait())
    }

    @Test func aStoppedJobEndsEarlyWithWhatItsWorkThrows() throws {
        let started = DispatchSemaphore(value: 0)
        let job = BackgroundJob<Int>(stoppable: { stopped in
            started.signal()
            while !stopped() { usleep(1000) }
            throw CancellationError()
        })
        started.wait()
        #expect(!job.isFinished)
        job.stop()
        #expect(throws: CancellationError.self) { try job.wait() }
        // A job that ended before it was stopped keeps its value.
        let done = BackgroundJob<Int>(stoppable: { _ in 7 })
        #expect(try done.wait() == 7)
        done.stop()
        #expect(try done.wait() == 7)
    }

    /// An idle job's thread has the lowest priority (nice 19) where the platform keeps one
    /// per thread (Linux: `/proc/thread-self/stat`, field 19); the caller's is unchanged.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/thread-self/stat"), "no per-thread nice value to read"))
    func anIdleJobRunsAtTheLowestPriority() throws {
        @Sendable func nice() -> Int? {
            guard let stat = try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            // Fields after the command's ")": state is field 3, nice field 19.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 16 ? Int(fields[16]) : nil
        }
        let caller = nice()
        #expect(try BackgroundJob(idle: true, stoppable: { _ in nice() }).wait() == 19)
        #expect(try BackgroundJob { nice() }.wait() == caller)
        #expect(nice() == caller)
    }
}
