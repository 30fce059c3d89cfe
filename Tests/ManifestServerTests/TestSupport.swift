import Foundation
import Glibc
import ManifestServer
import Synchronization

/// A temporary site folder inside its own temporary parent, so tests can put
/// "secret" files next to (outside) the served root.
final class TempSite: Sendable {
    /// The parent folder; only `root` is served.
    let parent: URL
    /// The served folder, `parent/site`.
    let root: URL

    init() throws {
        parent = FileManager.default.temporaryDirectory
            .appendingPathComponent("ManifestServerTests-\(UUID().uuidString)", isDirectory: true)
        root = parent.appendingPathComponent("site", isDirectory: true)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: parent) }

    /// Writes `bytes` to `path` under the root (folders created as needed).
    @discardableResult
    func write(_ path: String, _ bytes: [UInt8]) throws -> URL {
        let url = root.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: url)
        return url
    }
}

/// Bytes that differ at every position for practical purposes, fixed by `seed`.
func patternBytes(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
    var state = seed &+ 0x9E37_79B9_7F4A_7C15
    var bytes = [UInt8](repeating: 0, count: count)
    for i in 0..<count {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        bytes[i] = UInt8(truncatingIfNeeded: state >> 56)
    }
    return bytes
}

/// Starts a server on `site`, runs `body` with it and its port, and always stops it.
/// Write the closure as `{ server, port async throws in ... }`: a `try` that appears only
/// inside `#expect(...)` does not make a closure throwing by itself.
func withServer<T>(
    _ site: TempSite,
    faults: FaultPlan = .init(),
    log: (@Sendable (String) -> Void)? = nil,
    _ body: (ManifestServer, Int) async throws -> T
) async throws -> T {
    let server = ManifestServer(root: site.root, faults: faults, log: log)
    let port = try server.start()
    defer { server.stop() }
    return try await body(server, port)
}

/// A response as read off the wire by `RawHTTP`.
struct RawResponse: Sendable {
    var status: Int
    /// Header names lowercased.
    var headers: [String: String]
    var body: [UInt8]
    /// The read ended with an error such as ECONNRESET instead of a clean end of stream.
    var endedWithError: Bool

    func header(_ name: String) -> String? { headers[name.lowercased()] }
    var contentLength: Int? { header("Content-Length").flatMap { Int($0) } }
}

struct RawHTTPError: Error, CustomStringConvertible {
    var description: String
}

/// A deliberately dumb HTTP client on raw sockets: sends exactly the bytes given and reads
/// until the server closes. Blocking work runs on its own thread, never the async pool.
enum RawHTTP {
    /// Sends a GET for `target` with extra header lines.
    static func request(_ port: Int, _ target: String, headers: [String: String] = [:]) async throws -> RawResponse {
        try await request(port, "GET", target, headers: headers)
    }

    /// Sends `method` (GET, HEAD, POST...) for `target` with extra header lines.
    static func request(
        _ port: Int, _ method: String, _ target: String,
        headers: [String: String] = [:]
    ) async throws -> RawResponse {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        return try await send(port, text + "\r\n")
    }

    /// Sends `text` verbatim and parses whatever comes back.
    static func send(_ port: Int, _ text: String) async throws -> RawResponse {
        try await onThread {
            let fd = try connect(port)
            defer { close(fd) }
            let bytes = Array(text.utf8)
            guard bytes.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count
            else { throw RawHTTPError(description: "send failed: errno \(errno)") }
            var raw: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            var endedWithError = false
            while true {
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n > 0 {
                    raw += chunk[0..<n]
                    continue
                }
                endedWithError = n < 0
                break
            }
            return try parse(raw, endedWithError: endedWithError)
        }
    }

    static func parse(_ raw: [UInt8], endedWithError: Bool) throws -> RawResponse {
        guard let end = headEnd(raw) else { throw RawHTTPError(description: "no response head in \(raw.count) bytes") }
        let lines = String(decoding: raw[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, statusParts[0] == "HTTP/1.1", let status = Int(statusParts[1]) else {
            throw RawHTTPError(description: "bad status line \(lines[0])")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { throw RawHTTPError(description: "bad header \(line)") }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return RawResponse(status: status, headers: headers, body: Array(raw[(end + 4)...]), endedWithError: endedWithError)
    }

    /// Index of the CRLF CRLF that ends a response head.
    static func headEnd(_ raw: [UInt8]) -> Int? {
        guard raw.count >= 4 else { return nil }
        for i in 0...(raw.count - 4) where raw[i] == 13 && raw[i + 1] == 10 && raw[i + 2] == 13 && raw[i + 3] == 10 {
            return i
        }
        return nil
    }

    /// A blocking TCP connection to 127.0.0.1:`port` with a 20 s receive timeout.
    static func connect(_ port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError(description: "socket: errno \(errno)") }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            let code = errno
            close(fd)
            throw RawHTTPError(description: "connect: errno \(code)")
        }
        return fd
    }

    /// Runs blocking `work` on a fresh thread and awaits its result.
    static func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }
}

/// Streams a GET body off the socket and compares it, chunk by chunk, with `file`,
/// never holding more than one chunk of either in memory.
struct StreamComparison: Sendable {
    var status: Int
    var bodyLength: Int64
    var identical: Bool
}

func streamAndCompare(port: Int, path: String, with file: URL) async throws -> StreamComparison {
    try await RawHTTP.onThread {
        let fd = try RawHTTP.connect(port)
        defer { close(fd) }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let reference = try FileHandle(forReadingFrom: file)
        defer { try? reference.close() }

        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        var head: [UInt8] = []
        var status = 0
        var bodyLength: Int64 = 0
        var identical = true
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            var body = chunk[0..<n]
            if status == 0 {
                head += body
                guard let end = RawHTTP.headEnd(head) else { continue }
                status = try RawHTTP.parse(Array(head[0..<(end + 4)]), endedWithError: false).status
                body = head[(end + 4)...]
                head = []
            }
            guard !body.isEmpty else { continue }
            let expected = try reference.read(upToCount: body.count) ?? Data()
            if !expected.elementsEqual(body) { identical = false }
            bodyLength += Int64(body.count)
        }
        if try reference.read(upToCount: 1)?.isEmpty == false { identical = false }
        return StreamComparison(status: status, bodyLength: bodyLength, identical: identical)
    }
}

/// Resident set size of this process, from /proc/self/status, in bytes.
func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kilobytes = Int(line.split(separator: " ")[1])
    else { return 0 }
    return kilobytes * 1024
}

/// Samples the resident set size on a background thread until `stop()`; keeps the peak.
final class PeakMemorySampler: Sendable {
    private let running = Atomic<Bool>(true)
    private let peakBytes = Atomic<Int>(0)

    init() {
        Thread { [self] in
            while running.load(ordering: .relaxed) {
                let now = residentBytes()
                if now > peakBytes.load(ordering: .relaxed) { peakBytes.store(now, ordering: .relaxed) }
                usleep(2_000)
            }
        }.start()
    }

    /// Stops sampling and returns the largest resident size seen.
    func stop() -> Int {
        running.store(false, ordering: .relaxed)
        return peakBytes.load(ordering: .relaxed)
    }
}

/// Collects log lines from the server's threads.
final class LogCollector: Sendable {
    private let storage = Mutex<[String]>([])
    var lines: [String] { storage.withLock { $0 } }
    var sink: @Sendable (String) -> Void { { [self] line in storage.withLock { $0.append(line) } } }
}
