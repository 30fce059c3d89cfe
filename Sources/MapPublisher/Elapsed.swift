import Foundation

/// Wall time of a piece of work, for the publish report and log.
enum Elapsed {
    /// The value `work` returns and the wall seconds it took.
    ///
    /// `throws`, not `rethrows`: with `rethrows`, a debug build of Swift 6.3.1 crashed
    /// (signal 11, in `swift_retain` of a path string) after closures here that call
    /// typed-throws functions (`SmallPairTrialTests`, every run); with `throws` it does not.
    static func measure<T>(_ work: () throws -> T) throws -> (value: T, seconds: Double) {
        let start = ContinuousClock.now
        let value = try work()
        let elapsed = ContinuousClock.now - start
        return (value, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}
