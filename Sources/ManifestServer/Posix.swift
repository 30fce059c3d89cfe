#if canImport(Darwin)
    import Darwin
#else
    import Glibc
#endif

/// The server's few platform differences in one place: the C library's module (Glibc or
/// Darwin), the calls its names shadow (`open`, `close`, `listen`, `accept`), and the
/// constants that differ in type or exist on one side only. Every other file imports
/// the C library the same way (`#if canImport(Darwin)`) and calls `Posix` for these.
enum Posix {
    /// `SOCK_STREAM` as the `Int32` `socket(2)` takes.
    static var streamSocket: Int32 {
        #if canImport(Darwin)
            SOCK_STREAM
        #else
            Int32(SOCK_STREAM.rawValue)
        #endif
    }

    /// Flags `socket(2)` takes for close-on-exec (Darwin has none: see ``socket(_:_:_:)``).
    static func socket(_ family: Int32, _ type: Int32, _ proto: Int32) -> Int32 {
        #if canImport(Darwin)
            let fd = Darwin.socket(family, type, proto)
            if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            return fd
        #else
            return Glibc.socket(family, type | Int32(SOCK_CLOEXEC.rawValue), proto)
        #endif
    }

    /// Flags for `send(2)` so a peer that hung up gives an error, not SIGPIPE (on Darwin
    /// the socket carries `SO_NOSIGPIPE` instead: ``noSignalPipe(_:)``).
    static var sendFlags: Int32 {
        #if canImport(Darwin)
            0
        #else
            Int32(MSG_NOSIGNAL)
        #endif
    }

    /// Marks an accepted socket so writes to a closed peer never raise SIGPIPE (Darwin).
    static func noSignalPipe(_ fd: Int32) {
        #if canImport(Darwin)
            var one: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    static func open(_ path: String, _ flags: Int32) -> Int32 {
        #if canImport(Darwin)
            Darwin.open(path, flags)
        #else
            Glibc.open(path, flags)
        #endif
    }

    static func close(_ fd: Int32) {
        #if canImport(Darwin)
            _ = Darwin.close(fd)
        #else
            _ = Glibc.close(fd)
        #endif
    }

    static func listen(_ fd: Int32, _ backlog: Int32) -> Int32 {
        #if canImport(Darwin)
            Darwin.listen(fd, backlog)
        #else
            Glibc.listen(fd, backlog)
        #endif
    }

    static func accept(_ fd: Int32) -> Int32 {
        #if canImport(Darwin)
            Darwin.accept(fd, nil, nil)
        #else
            Glibc.accept(fd, nil, nil)  // accept4 is not exported without _GNU_SOURCE
        #endif
    }
}
