/// Turns a request target into path segments relative to the served root.
enum RequestPath: Sendable, Equatable {
    /// Safe segments, none of them empty, `.` or `..`.
    case segments([String])
    /// Not a path this server can serve (answer 400): not origin-form or a bad `%` escape.
    case badRequest
    /// A path that must not be served (answer 404): `..`, NUL or invalid UTF-8 after decoding.
    case refused

    /// Decodes `target` (query and fragment dropped, percent-escapes decoded *before*
    /// splitting, so `%2e%2e` and `..%2f` are refused like `..`).
    static func decode(_ target: String) -> RequestPath {
        var path = Substring(target)
        for scheme in ["http://", "https://"] where path.lowercased().hasPrefix(scheme) {
            let afterScheme = path.dropFirst(scheme.count)
            path = afterScheme.firstIndex(of: "/").map { afterScheme[$0...] } ?? "/"
        }
        if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
        guard path.hasPrefix("/") else { return .badRequest }
        guard let bytes = percentDecoded(path) else { return .badRequest }
        guard !bytes.contains(0), let decoded = String(validating: bytes, as: UTF8.self) else { return .refused }

        var segments: [String] = []
        for segment in decoded.split(separator: "/") where segment != "." {
            if segment == ".." { return .refused }
            segments.append(String(segment))
        }
        return .segments(segments)
    }

    /// The decoded path for logs and statistics, e.g. `/maps/a.pmtiles`.
    var displayPath: String? {
        guard case .segments(let parts) = self else { return nil }
        return "/" + parts.joined(separator: "/")
    }

    private static func percentDecoded(_ text: Substring) -> [UInt8]? {
        var out: [UInt8] = []
        var bytes = text.utf8.makeIterator()
        while let byte = bytes.next() {
            guard byte == UInt8(ascii: "%") else {
                out.append(byte)
                continue
            }
            guard let high = bytes.next().flatMap(hexValue), let low = bytes.next().flatMap(hexValue) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
