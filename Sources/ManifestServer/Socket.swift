import Foundation
import MapPlatform

/// Thin wrappers over the POSIX socket calls the server makes. Sends never raise SIGPIPE
/// (`MSG_NOSIGNAL` on Linux, `SO_NOSIGPIPE` on Apple platforms: ``Posix``): a client that hangs up yields an error.
enum Socket {
    /// Binds a TCP listener (with `SO_REUSEADDR`) and returns it with the port it got.
    static func listen(host: String, port: Int, backlog: Int32 = 128) throws -> (fd: Int32, port: Int) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Posix.streamSocket
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &result)
        guard rc == 0, let info = result else {
            throw ManifestServerError.addressResolution(host: host, message: String(cString: gai_strerror(rc)))
        }
        defer { freeaddrinfo(info) }

        let fd = Posix.socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
        guard fd >= 0 else { throw ManifestServerError.socket(operation: "socket", errno: errno) }
        var one: Int32 = 1
        guard setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw closing(fd, operation: "setsockopt(SO_REUSEADDR)")
        }
        guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            throw closing(fd, operation: "bind")
        }
        guard Posix.listen(fd, backlog) == 0 else { throw closing(fd, operation: "listen") }
        guard let bound = localPort(fd) else { throw closing(fd, operation: "getsockname") }
        return (fd, bound)
    }

    /// Accepts one connection; returns `nil` with `errno` set on failure.
    static func accept(_ listener: Int32) -> Int32? {
        let fd = Posix.accept(listener)
        guard fd >= 0 else { return nil }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        Posix.noSignalPipe(fd)
        return fd
    }

    /// Sends the whole buffer unless the peer goes away; returns the bytes actually sent.
    static func sendAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        var sent = 0
        while sent < buffer.count {
            let n = send(fd, base + sent, buffer.count - sent, Posix.sendFlags)
            if n > 0 {
                sent += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                break
            }
        }
        return sent
    }

    /// Sends all of `bytes`; returns whether every byte went out.
    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { sendAll(fd, $0) } == bytes.count
    }

    /// Receives into `buffer`: the byte count, 0 at end of stream, -1 on error or timeout.
    static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n < 0 && errno == EINTR { continue }
            return n
        }
    }

    /// Whether the last failed receive gave up because its timeout passed.
    static var receiveTimedOut: Bool { errno == EAGAIN || errno == EWOULDBLOCK }

    /// Makes blocking receives on `fd` give up after `seconds`.
    static func setReceiveTimeout(_ fd: Int32, seconds: Int) {
        setReceiveTimeout(fd, .seconds(seconds))
    }

    /// Makes blocking receives on `fd` give up after `duration` (at least a millisecond).
    static func setReceiveTimeout(_ fd: Int32, _ duration: Duration) {
        var timeout = timeval(duration)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Makes blocking sends on `fd` give up after `duration` without progress (at least a
    /// millisecond): ``sendAll(_:_:)-(_,UnsafeRawBufferPointer)`` then stops short.
    static func setSendTimeout(_ fd: Int32, _ duration: Duration) {
        var timeout = timeval(duration)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Stops further sends (the peer sees end of stream) but keeps reading possible.
    static func shutdownWrite(_ fd: Int32) { _ = shutdown(fd, Int32(SHUT_WR)) }

    /// Stops both directions; wakes any thread blocked in accept, recv or send on `fd`.
    static func shutdownBoth(_ fd: Int32) { _ = shutdown(fd, Int32(SHUT_RDWR)) }

    /// Closes `fd`.
    static func close(_ fd: Int32) { Posix.close(fd) }

    private static func localPort(_ fd: Int32) -> Int? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
        default:
            return nil
        }
    }

    private static func closing(_ fd: Int32, operation: String) -> ManifestServerError {
        let code = errno
        Posix.close(fd)
        return .socket(operation: operation, errno: code)
    }
}

extension timeval {
    /// `duration` as a socket timeout: at least a millisecond (zero would mean none).
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let microseconds = max(seconds == 0 ? 1_000 : 0, attoseconds / 1_000_000_000_000)
        self.init(tv_sec: Int(max(0, seconds)), tv_usec: Int(microseconds))
    }
}
