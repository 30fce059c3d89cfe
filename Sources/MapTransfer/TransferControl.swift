import Foundation
import Synchronization

/// Pauses and resumes the downloads of one operation. The operation's sources carry it
/// (``SiteSource/controlled(by:)``, made for the operation from the loader's): a pause
/// ends each request in flight at once, keeping its partial file, and the next request
/// after ``resume()`` continues it with `Range`.
package final class TransferControl: Sendable {
    private struct State {
        var paused = false
        var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]
        var inFlight = 0
    }

    private let state = Mutex(State())

    package init() {}

    /// Whether downloads are paused.
    package var isPaused: Bool { state.withLock { $0.paused } }

    /// Requests running now (none shortly after a pause).
    package var requestsInFlight: Int { state.withLock { $0.inFlight } }

    /// Stops downloading: requests in flight end, keeping what they received.
    package func pause() { state.withLock { $0.paused = true } }

    /// Goes on downloading where each file stopped.
    package func resume() {
        let waiters = state.withLock { state in
            state.paused = false
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns at once when not paused, else when resumed; throws `CancellationError`
    /// when the waiting task is cancelled.
    package func waitWhilePaused() async throws {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiting = state.withLock { state in
                    guard state.paused, !Task.isCancelled else { return false }
                    state.waiters[id] = continuation
                    return true
                }
                if !waiting { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
        try Task.checkCancellation()
    }

    /// Counts a request as in flight while `body` runs.
    package func counting<T>(_ body: () async -> T) async -> T {
        state.withLock { $0.inFlight += 1 }
        defer { state.withLock { $0.inFlight -= 1 } }
        return await body()
    }
}
