/// An inclusive byte range within a file.
struct ByteRange: Sendable, Equatable {
    var start: Int64
    var end: Int64

    var length: Int64 { end - start + 1 }
}

/// How a `Range` header (RFC 9110 §14.2) applies to a file of a given size.
enum RangeRequest: Sendable, Equatable {
    /// Send the whole file with 200: no header, a header this server ignores
    /// (bad syntax, another unit) or several ranges.
    case full
    /// Send this range with 206.
    case partial(ByteRange)
    /// Answer 416 with `Content-Range: bytes */size`.
    case unsatisfiable

    /// Resolves a `Range` header value against a file of `size` bytes.
    static func resolve(_ header: String?, size: Int64) -> RangeRequest {
        guard let header else { return .full }
        let value = header.trimmingHTTPWhitespace()
        guard value.count > 6, value.prefix(6).lowercased() == "bytes=" else { return .full }
        let spec = value.dropFirst(6).trimmingHTTPWhitespace()
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .full }
        let first = spec[..<dash].trimmingHTTPWhitespace()
        let last = spec[spec.index(after: dash)...].trimmingHTTPWhitespace()

        if first.isEmpty {
            // bytes=-n: the last n bytes.
            guard let suffix = digits(last) else { return .full }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .partial(ByteRange(start: max(0, size - suffix), end: size - 1))
        }
        guard let start = digits(first) else { return .full }
        var end = size - 1
        if !last.isEmpty {
            guard let requestedEnd = digits(last) else { return .full }
            guard requestedEnd >= start else { return .full }  // invalid spec: ignore the header
            end = min(requestedEnd, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .partial(ByteRange(start: start, end: end))
    }

    /// A non-empty run of ASCII digits; values too big for Int64 saturate at `Int64.max`.
    private static func digits(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text) ?? Int64.max
    }
}
