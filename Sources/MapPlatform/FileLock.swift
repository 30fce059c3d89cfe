import Foundation

/// An advisory `flock(2)` lock on one file.
///
/// The lock belongs to an open file description, so it dies with its process (a holder
/// killed with SIGKILL never blocks anyone) and two opens in one process exclude each other
/// as two processes do. Waiting polls with `Task.sleep`, so a waiter never blocks a thread
/// of Swift's cooperative pool and is cancelled at once.
package final class FileLock: Sendable {
    /// Shared (many readers) or exclusive (one writer).
    package enum Mode: Sendable { case shared, exclusive }

    /// Thrown by ``acquire(_:_:wait:onWait:)`` when told not to wait and the lock is held.
    package struct Busy: Error, Sendable {
        /// The holder's process id, when it recorded one.
        package let holder: Int32?
    }

    /// The locked file.
    package let path: String
    /// The open file that holds the lock; closing it (when the object goes away) releases
    /// the lock.
    private let file: SystemFile

    private init(file: SystemFile) {
        self.path = file.path
        self.file = file
    }

    /// Takes the lock if it is free; `nil` when another holder has it.
    package static func attempt(_ path: String, _ mode: Mode) throws(SystemError) -> FileLock? {
        let file = try SystemFile.openForUpdate(path)
        guard try file.tryLock(exclusive: mode == .exclusive) else { return nil }
        let lock = FileLock(file: file)
        if mode == .exclusive { lock.recordHolder() }
        return lock
    }

    /// Takes the lock, waiting for other holders unless `wait` is false (then it throws
    /// ``Busy``).
    /// - Parameter onWait: called once, with the holder's pid when it is known, before waiting.
    package static func acquire(
        _ path: String, _ mode: Mode, wait: Bool,
        onWait: (Int32?) -> Void
    ) async throws -> FileLock {
        var announced = false
        while true {
            if let lock = try attempt(path, mode) { return lock }
            let holder = holderPID(path)
            guard wait else { throw Busy(holder: holder) }
            if !announced {
                onWait(holder)
                announced = true
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// The pid an exclusive holder wrote into the file, if any.
    package static func holderPID(_ path: String) -> Int32? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Writes this process's pid into the lock file so waiters can name the holder.
    private func recordHolder() {
        let text = Array("\(FileSystem.processID)\n".utf8)
        try? file.truncate(to: 0)
        text.withUnsafeBytes { raw in _ = try? file.writeAll(raw, at: 0) }
    }
}
