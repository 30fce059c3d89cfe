/// The request line and headers of one HTTP/1.x request. Bodies are never read.
struct HTTPRequest: Sendable, Equatable {
    /// Why no request could be read.
    enum ReadError: Error, Equatable {
        /// The bytes are not an HTTP/1.x request head (answer 400).
        case malformed
        /// No blank line within `maxHeadBytes` (answer 431).
        case headTooLarge
        /// The peer closed before sending a full head (send nothing).
        case connectionClosed
        /// The head did not arrive whole within the time allowed, however the bytes
        /// trickled in (answer 408).
        case headTimeout
    }

    /// Largest accepted request head, request line included.
    static let maxHeadBytes = 16 * 1024

    var method: String
    var target: String
    var version: String
    var headers: [(name: String, value: String)]

    /// The first value of header `name` (case-insensitive), if present.
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.target == rhs.target && lhs.version == rhs.version
            && lhs.headers.map(\.name) == rhs.headers.map(\.name)
            && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }
}

extension HTTPRequest {
    /// Reads from `fd` until the blank line that ends the head, then parses it. The whole
    /// head must arrive within `limit`: a peer dribbling a byte at a time cannot hold the
    /// connection longer than that.
    static func read(from fd: Int32, within limit: Duration) -> Result<HTTPRequest, ReadError> {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        var head: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let left = deadline - clock.now
            guard left > .zero else { return .failure(.headTimeout) }
            Socket.setReceiveTimeout(fd, left)
            let n = chunk.withUnsafeMutableBytes { Socket.receive(fd, into: $0) }
            if n < 0, Socket.receiveTimedOut { return .failure(.headTimeout) }
            guard n > 0 else { return .failure(.connectionClosed) }
            let searchFrom = max(0, head.count - 3)
            head.append(contentsOf: chunk[0..<n])
            // A request starts with a method name, in ASCII letters: anything else (a TLS
            // ClientHello of a client that was given https:// for this plain-HTTP server)
            // is answered 400 at once instead of after the head timeout.
            if let first = head.first, !(UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(first), first != cr, first != lf {
                return .failure(.malformed)
            }
            if let end = headEnd(in: head, from: searchFrom) {
                guard end <= maxHeadBytes else { return .failure(.headTooLarge) }
                do { return .success(try parse(head[0..<end])) } catch { return .failure(error) }
            }
            if head.count > maxHeadBytes { return .failure(.headTooLarge) }
        }
    }

    /// Index just past the first blank line (CRLF CRLF, or a bare LF LF) at or after `start`.
    static func headEnd(in bytes: [UInt8], from start: Int) -> Int? {
        var i = start
        while i < bytes.count {
            if bytes[i] == lf {
                if i + 1 < bytes.count, bytes[i + 1] == lf { return i + 2 }
                if i + 2 < bytes.count, bytes[i + 1] == cr, bytes[i + 2] == lf { return i + 3 }
            }
            i += 1
        }
        return nil
    }

    /// Parses a complete request head (request line, header lines, blank line).
    static func parse(_ bytes: ArraySlice<UInt8>) throws(ReadError) -> HTTPRequest {
        var lines = try splitLines(bytes)
        while lines.first?.isEmpty == true { lines.removeFirst() }  // RFC 9112 §2.2: ignore leading blank lines
        guard let requestLine = lines.first else { throw .malformed }

        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3,
            !parts[0].isEmpty, parts[0].utf8.allSatisfy(isTokenByte),
            !parts[1].isEmpty, parts[1].utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }),
            parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0"
        else { throw .malformed }

        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { throw .malformed }
            let name = line[..<colon]
            // An empty or whitespace-containing name also rejects obsolete line folding.
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte) else { throw .malformed }
            let value = line[line.index(after: colon)...].trimmingHTTPWhitespace()
            guard value.utf8.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else { throw .malformed }
            headers.append((String(name), String(value)))
        }
        return HTTPRequest(
            method: String(parts[0]), target: String(parts[1]),
            version: String(parts[2]), headers: headers)
    }

    private static func splitLines(_ bytes: ArraySlice<UInt8>) throws(ReadError) -> [String] {
        var lines: [String] = []
        for rawLine in bytes.split(separator: lf, omittingEmptySubsequences: false) {
            var line = rawLine
            if line.last == cr { line = line.dropLast() }
            guard !line.contains(cr), !line.contains(0) else { throw .malformed }
            lines.append(String(decoding: line, as: UTF8.self))
        }
        return lines
    }

    private static let cr: UInt8 = 0x0D
    private static let lf: UInt8 = 0x0A

    /// RFC 9110 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    func trimmingHTTPWhitespace() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        let string = Substring(self)
        guard let first = string.firstIndex(where: { !isSpace($0) }),
            let last = string.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return string[first...last]
    }
}
