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

/// The terminal the command line draws on (progress bars on standard error).
package enum TerminalSize {
    /// Whether standard error is a terminal (a progress bar) rather than a pipe or a file (plain lines).
    package static var standardErrorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// Columns of the terminal on standard error: its window size, else `$COLUMNS`, else 80.
    package static func columns() -> Int {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        if let columns = ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init), columns > 0 { return columns }
        return 80
    }
}
