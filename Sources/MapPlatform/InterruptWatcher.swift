import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Android)
    import Android
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The pipe the signal handler writes to: `(read, write)`.
///
/// `nonisolated(unsafe)` is safe here: it is written in `InterruptWatcher.init`, before the
/// handler that reads it is installed, and one watcher runs at a time (a command's), whose
/// ``InterruptWatcher/stop()`` uninstalls the handler before the next one writes it.
nonisolated(unsafe) private var interruptPipe: (read: Int32, write: Int32) = (-1, -1)

/// Turns SIGINT and SIGTERM into a call of `onInterrupt` while a command runs; a second
/// signal exits at once (status 130).
///
/// The handler only writes a byte to a pipe (async-signal-safe); a watcher thread reads it
/// and calls `onInterrupt`. It is installed with `signal(3)`, which every C library here
/// (glibc, Darwin's, Bionic, musl) gives BSD semantics: the handler stays installed and
/// interrupted calls restart, without naming `struct sigaction`'s platform-specific fields.
/// One watcher at a time; ``stop()`` ends its thread and closes its pipe.
package final class InterruptWatcher {
    private var writer: Int32 = -1

    package init(onInterrupt: @escaping @Sendable () -> Void) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }
        writer = fds[1]
        interruptPipe = (fds[0], fds[1])
        let handler: @convention(c) (Int32) -> Void = { _ in
            var byte: UInt8 = 1
            _ = write(interruptPipe.write, &byte, 1)
        }
        signal(SIGINT, handler)
        signal(SIGTERM, handler)
        let reader = fds[0]
        let watcher = Thread {
            // A process may start with these signals blocked (a parent spawned it from a
            // thread that blocks them, as dispatch's worker threads do): unblocked here, they
            // reach this thread at least.
            var signals = sigset_t()
            sigemptyset(&signals)
            sigaddset(&signals, SIGINT)
            sigaddset(&signals, SIGTERM)
            pthread_sigmask(SIG_UNBLOCK, &signals, nil)
            var byte: UInt8 = 0
            var seen = 0
            while true {
                let count = read(reader, &byte, 1)
                if count < 0, errno == EINTR { continue }
                guard count == 1 else {
                    close(reader)  // stop() closed the writing end
                    return
                }
                seen += 1
                if seen > 1 { exit(130) }
                onInterrupt()
            }
        }
        watcher.name = "maploader interrupts"
        watcher.start()
    }

    /// Restores the default signal handling, and ends the watcher's thread.
    package func stop() {
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
        guard writer >= 0 else { return }
        close(writer)
        writer = -1
    }
}
