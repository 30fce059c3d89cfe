import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// An advisory `flock(2)` lock on one file.
///
/// The lock belongs to an open file description, so it dies with its process (a holder
/// killed with SIGKILL never blocks anyone) and two opens in one process exclude each other
/// as two processes do. Waiting polls with `Task.sleep`, so a waiter never blocks a thread
/// of Swift's cooperative pool and is cancelled at once.
final class FileLock: Sendable {
    /// Shared (many readers) or exclusive (one writer).
    enum Mode: Sendable { case shared, exclusive }

    /// The locked file.
    let path: String
    /// The open descriptor that holds the lock; closing it releases the lock. Only `deinit`
    /// closes it, so it is valid for the object's whole life.
    private let fd: Int32

    private init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    deinit { close(fd) }

    /// Takes the lock if it is free; `nil` when another holder has it.
    static func attempt(_ path: String, _ mode: Mode) throws -> FileLock? {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw StorageError(path: path, errno: errno) }
        if flock(fd, (mode == .shared ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0 {
            let lock = FileLock(path: path, fd: fd)
            if mode == .exclusive { lock.recordHolder() }
            return lock
        }
        let code = errno
        close(fd)
        guard code == EWOULDBLOCK || code == EINTR else { throw StorageError(path: path, errno: code) }
        return nil
    }

    /// Takes the lock, waiting for other holders unless `wait` is false.
    /// - Parameter onWait: called once, with the holder's pid when it is known, before waiting.
    static func acquire(_ path: String, _ mode: Mode, wait: Bool,
                        onWait: (Int32?) -> Void) async throws -> FileLock {
        var announced = false
        while true {
            if let lock = try attempt(path, mode) { return lock }
            let holder = holderPID(path)
            guard wait else { throw MapLoaderError.busy(pid: holder.map(Int.init)) }
            if !announced {
                onWait(holder)
                announced = true
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// The pid an exclusive holder wrote into the file, if any.
    static func holderPID(_ path: String) -> Int32? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Writes this process's pid into the lock file so waiters can name the holder.
    private func recordHolder() {
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    }
}
