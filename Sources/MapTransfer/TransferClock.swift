/// The time transfers go by: the instant now, and waiting. Retries, their backoff, the
/// deadlines and a bandwidth cap's pauses all read it, so a test can pass a clock of its
/// own and check them without waiting for real time.
package protocol TransferClock: Sendable {
    /// The instant now.
    var now: ContinuousClock.Instant { get }
    /// Waits `duration` (throws when the task is cancelled).
    func sleep(for duration: Duration) async throws
}

/// The system's continuous clock.
package struct SystemTransferClock: TransferClock {
    /// The system clock.
    package init() {}

    package var now: ContinuousClock.Instant { .now }

    package func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}
