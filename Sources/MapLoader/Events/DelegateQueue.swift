import Synchronization

/// Calls a loader's delegate one event at a time, in the order the events were numbered,
/// on the executor its ``MapLoader/DelegateDelivery`` names: events are numbered and queued
/// by the emitting thread (``EventHub``, which numbers them in the order its streams get
/// them) and called by one task. An operation waits for its last event's call
/// (``waitUntilCalled(_:)``) before it returns.
final class DelegateQueue: Sendable {
    private struct State {
        var queued: UInt64 = 0
        var called: UInt64 = 0
        var finished = false
        var waiters: [(number: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())
    private let continuation: AsyncStream<(UInt64, MapLoaderEvent)>.Continuation

    /// A queue whose task hands each event to `call` on the executor `delivery` names, while
    /// `present` says there is a delegate to call (without one, nothing waits for the
    /// executor: a blocked main thread then holds up no operation).
    init(
        delivery: MapLoader.DelegateDelivery, present: @escaping @Sendable () -> Bool,
        call: @escaping @Sendable (MapLoaderEvent) -> Void
    ) {
        let (stream, continuation) = AsyncStream<(UInt64, MapLoaderEvent)>.makeStream(bufferingPolicy: .unbounded)
        self.continuation = continuation
        // The task holds the queue until the stream ends (``finish()``, from the hub's end).
        Task {
            for await (number, event) in stream {
                switch present() ? delivery : .background {
                case .mainActor: await MainActor.run { call(event) }
                case .background: call(event)
                case .actor(let actor): await Self.run(on: actor) { call(event) }
                }
                self.mark(number)
            }
            self.ended()
        }
    }

    /// Runs `body` isolated to `actor`.
    private static func run(on actor: isolated any Actor, _ body: @Sendable () -> Void) { body() }

    /// Queues `event` and returns its number; the caller holds the lock that orders events.
    func enqueue(_ event: MapLoaderEvent) -> UInt64 {
        state.withLock { state in
            state.queued += 1
            continuation.yield((state.queued, event))
            return state.queued
        }
    }

    /// Returns once the event numbered `number` has been handed to the delegate (or the
    /// queue ended).
    func waitUntilCalled(_ number: UInt64) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
                if state.finished || state.called >= number { return true }
                state.waiters.append((number, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Ends the queue once the events queued so far were called.
    func finish() { continuation.finish() }

    private func mark(_ number: UInt64) {
        let ready = state.withLock { state in
            state.called = number
            let ready = state.waiters.filter { $0.number <= number }
            state.waiters.removeAll { $0.number <= number }
            return ready
        }
        for waiter in ready { waiter.continuation.resume() }
    }

    private func ended() {
        let waiting = state.withLock { state in
            state.finished = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiting { waiter.continuation.resume() }
    }
}
