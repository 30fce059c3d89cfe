#if canImport(Darwin)
    import Darwin
#elseif canImport(Android)
    import Android
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The test server's few platform differences (ManifestServer, which only Linux and macOS
/// build): the calls whose names its own types shadow (`open`, `close`, `listen`,
/// `accept`), and the socket constants that differ in type or exist on one side only. The
/// server's files import Foundation alone, which brings the C library on every platform.
package enum Posix {
    /// `SOCK_STREAM` as the `Int32` `socket(2)` takes.
    package static var streamSocket: Int32 {
        #if canImport(Darwin)
            SOCK_STREAM
        #elseif canImport(Glibc)
            Int32(SOCK_STREAM.rawValue)
        #else
            Int32(SOCK_STREAM)  // a plain macro in Bionic and musl
        #endif
    }

    /// Flags `socket(2)` takes for close-on-exec (Darwin has none: see ``socket(_:_:_:)``).
    package static func socket(_ family: Int32, _ type: Int32, _ proto: Int32) -> Int32 {
        #if canImport(Darwin)
            let fd = cSocket(family, type, proto)
            if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            return fd
        #elseif canImport(Glibc)
            return cSocket(family, type | Int32(SOCK_CLOEXEC.rawValue), proto)
        #else
            return cSocket(family, type | Int32(SOCK_CLOEXEC), proto)  // a plain macro in Bionic and musl
        #endif
    }

    /// Flags for `send(2)` so a peer that hung up gives an error, not SIGPIPE (on Darwin
    /// the socket carries `SO_NOSIGPIPE` instead: ``noSignalPipe(_:)``).
    package static var sendFlags: Int32 {
        #if canImport(Darwin)
            0
        #else
            Int32(MSG_NOSIGNAL)
        #endif
    }

    /// Marks an accepted socket so writes to a closed peer never raise SIGPIPE (Darwin).
    package static func noSignalPipe(_ fd: Int32) {
        #if canImport(Darwin)
            var one: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    package static func open(_ path: String, _ flags: Int32) -> Int32 {
        cOpen(path, flags)
    }

    package static func close(_ fd: Int32) {
        _ = cClose(fd)
    }

    package static func listen(_ fd: Int32, _ backlog: Int32) -> Int32 {
        cListen(fd, backlog)
    }

    package static func accept(_ fd: Int32) -> Int32 {
        cAccept(fd)  // accept4 is not exported without _GNU_SOURCE
    }
}

// The C library's calls that ``Posix``'s own methods shadow by name, reached from file
// scope so that no platform module is named.
private func cSocket(_ family: Int32, _ type: Int32, _ proto: Int32) -> Int32 { socket(family, type, proto) }
private func cOpen(_ path: String, _ flags: Int32) -> Int32 { open(path, flags) }
private func cClose(_ fd: Int32) -> Int32 { close(fd) }
private func cListen(_ fd: Int32, _ backlog: Int32) -> Int32 { listen(fd, backlog) }
private func cAccept(_ fd: Int32) -> Int32 { accept(fd, nil, nil) }
