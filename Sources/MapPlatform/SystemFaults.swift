import Synchronization
package import SystemPackage

/// Faults a test makes the platform layer's calls fail with, without root or a special file
/// system: `ENOSPC` at the Nth write, `EXDEV` on a rename, `EIO` on an `fsync`, `EINTR` a
/// few times (which the calls retry). The model is swift-system's mocking layer; here a
/// fault names the folder it applies under, so tests running at once in one process (each in
/// a folder of its own) never see each other's.
///
/// With no fault armed a call pays one atomic load.
package enum SystemFaults {
    /// A call that can be made to fail.
    package enum Call: String, Sendable {
        /// ``SystemFile/writeAll(_:)`` and ``SystemFile/writeAll(_:at:)``.
        case write
        /// ``FileSystem/rename(_:_:)``.
        case rename
        /// ``SystemFile/sync()``, ``FileSystem/sync(_:)`` and ``FileSystem/syncAll(under:)``.
        case fsync
        /// ``SystemFile/reserve(_:)`` (`posix_fallocate`).
        case reserve
    }

    /// One fault: `call` on a path under `folder` fails with `errno`, after `passing` such
    /// calls went through, `times` times.
    package struct Rule: Sendable {
        package var call: Call
        package var folder: String
        package var errno: Errno
        package var passing: Int
        package var times: Int

        package init(_ call: Call, under folder: String, errno: Errno, passing: Int = 0, times: Int = .max) {
            self.call = call
            self.folder = folder.hasSuffix("/") ? folder : folder + "/"
            self.errno = errno
            self.passing = passing
            self.times = times
        }
    }

    /// A fault in force; ``remove(_:)`` ends it.
    package struct Armed: Sendable, Hashable {
        fileprivate let id: Int
    }

    private struct State {
        var rules: [Int: Rule] = [:]
        var fired: [Int: Int] = [:]
        var next = 0
    }

    private static let armedCount = Atomic<Int>(0)
    private static let state = Mutex(State())

    /// Puts `rule` in force.
    @discardableResult
    package static func inject(_ rule: Rule) -> Armed {
        let id = state.withLock { state in
            state.next += 1
            state.rules[state.next] = rule
            return state.next
        }
        armedCount.add(1, ordering: .sequentiallyConsistent)
        return Armed(id: id)
    }

    /// How many calls a fault failed so far: a test checks that its fault was met.
    package static func fired(_ armed: Armed) -> Int { state.withLock { $0.fired[armed.id] ?? 0 } }

    /// Ends a fault.
    package static func remove(_ armed: Armed) {
        let removed = state.withLock { state in
            state.fired[armed.id] = nil
            return state.rules.removeValue(forKey: armed.id)
        }
        if removed != nil {
            armedCount.subtract(1, ordering: .sequentiallyConsistent)
        }
    }

    /// Runs `body` with `rules` in force, and ends them after; returns its result and how
    /// many calls each rule failed.
    package static func with<T>(_ rules: [Rule], _ body: () async throws -> T) async rethrows -> (T, fired: [Int]) {
        let armed = rules.map { inject($0) }
        defer { for each in armed { remove(each) } }
        let result = try await body()
        return (result, armed.map(fired))
    }

    /// Runs the system call `attempt` (true when it succeeded, else `errno` says why) until it
    /// succeeds or fails with more than `EINTR`, a fault for `call` on `path` standing in for
    /// the real call while one is armed: the retry loop of every call this seam covers.
    package static func retrying(
        _ call: Call, _ path: String, named operation: String, _ attempt: () -> Bool
    ) throws(SystemError) {
        while true {
            let code: Errno
            if let injected = failure(call, path) {
                code = injected
            } else if attempt() {
                return
            } else {
                code = .current
            }
            if code != .interrupted { throw SystemError(operation, path, code) }
        }
    }

    /// The error `call` on `path` is to fail with now, if a fault says so (and counts it).
    package static func failure(_ call: Call, _ path: String) -> Errno? {
        guard armedCount.load(ordering: .relaxed) > 0 else { return nil }
        return state.withLock { state in
            for (id, rule) in state.rules.sorted(by: { $0.key < $1.key })
            where rule.call == call && (path + "/").hasPrefix(rule.folder) && rule.times > 0 {
                if rule.passing > 0 {
                    state.rules[id]?.passing -= 1
                    return nil
                }
                state.rules[id]?.times -= 1
                state.fired[id, default: 0] += 1
                return rule.errno
            }
            return nil
        }
    }
}
