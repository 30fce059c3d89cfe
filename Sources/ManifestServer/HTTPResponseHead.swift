/// Status line and headers of a response, serialized with CRLF line ends.
struct HTTPResponseHead: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]

    /// A head carrying the headers every response gets: Date, Server and `Connection: close`.
    init(status: Int, headers: [(name: String, value: String)] = [], now: Int = HTTPDate.nowSeconds()) {
        self.status = status
        self.headers =
            [("Date", HTTPDate.format(now)), ("Server", "ManifestServer")] + headers
            + [("Connection", "close")]
    }

    /// The value of header `name` (case-insensitive), if set.
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The bytes to put on the wire, through the blank line.
    func serialized() -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(Self.reason(for: status))\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// The standard reason phrase for the statuses this server sends.
    static func reason(for status: Int) -> String {
        switch status {
        case 200: "OK"
        case 206: "Partial Content"
        case 302: "Found"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 416: "Range Not Satisfiable"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status \(status)"
        }
    }
}
