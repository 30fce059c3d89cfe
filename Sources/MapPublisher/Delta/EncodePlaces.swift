import Dispatch
import Synchronization

/// The places of the process's large encodes (``PayloadChooser/largeEncodes``): a
/// counting semaphore that also says how many places are held, for tests that need the
/// places free before they start (another test's large encodes share them).
package final class EncodePlaces: Sendable {
    private let gate: DispatchSemaphore
    private let taken = Atomic<Int>(0)

    /// `count` places.
    init(_ count: Int) { gate = DispatchSemaphore(value: count) }

    /// Takes a place, waiting for one.
    func take() {
        gate.wait()
        taken.add(1, ordering: .relaxed)
    }

    /// Gives a place back.
    func give() {
        taken.subtract(1, ordering: .relaxed)
        gate.signal()
    }

    /// How many places are held now.
    package var held: Int { taken.load(ordering: .relaxed) }
}
