/// The validators of one file version, as sent in `ETag` and `Last-Modified`.
struct Validators: Sendable, Equatable {
    /// Strong entity tag, quotes included: `"<size-hex>-<mtime-ns-hex>"`.
    var etag: String
    /// Modification time in whole seconds since 1970.
    var lastModified: Int

    init(size: Int64, mtimeSeconds: Int, mtimeNanoseconds: Int) {
        let nanos = UInt64(bitPattern: Int64(mtimeSeconds) &* 1_000_000_000 &+ Int64(mtimeNanoseconds))
        etag = "\"\(String(UInt64(size), radix: 16))-\(String(nanos, radix: 16))\""
        lastModified = mtimeSeconds
    }
}

/// Conditional request headers (RFC 9110 §13) for GET and HEAD.
enum Preconditions {
    /// Whether to answer 304: `If-None-Match` matches (weak comparison, or `*`), or, only
    /// when there is no `If-None-Match`, `If-Modified-Since` is not older than the file.
    static func isNotModified(_ request: HTTPRequest, _ validators: Validators) -> Bool {
        if let ifNoneMatch = request.header("If-None-Match") {
            guard let tags = entityTags(ifNoneMatch) else { return true }  // "*"
            return tags.contains { opaque($0) == opaque(validators.etag) }
        }
        if let ifModifiedSince = request.header("If-Modified-Since"), let date = HTTPDate.parse(ifModifiedSince) {
            return validators.lastModified <= date
        }
        return false
    }

    /// Whether a `Range` header may be honoured: no `If-Range`, or an `If-Range` that
    /// strongly matches the ETag or equals the Last-Modified date.
    static func allowsRange(_ request: HTTPRequest, _ validators: Validators) -> Bool {
        guard let ifRange = request.header("If-Range")?.trimmingHTTPWhitespace() else { return true }
        if ifRange.hasPrefix("\"") { return ifRange == validators.etag }
        if ifRange.hasPrefix("W/") { return false }  // weak tags never match for ranges
        return HTTPDate.parse(String(ifRange)) == validators.lastModified
    }

    /// The tags in an `If-None-Match` list, or `nil` for `*`. Malformed entries are skipped.
    static func entityTags(_ list: String) -> [String]? {
        if list.trimmingHTTPWhitespace() == "*" { return nil }
        var tags: [String] = []
        var rest = Substring(list)
        while let open = rest.firstIndex(of: "\"") {
            let weak = rest[..<open].hasSuffix("W/")
            let afterOpen = rest.index(after: open)
            guard let close = rest[afterOpen...].firstIndex(of: "\"") else { break }
            tags.append((weak ? "W/" : "") + String(rest[open...close]))
            rest = rest[rest.index(after: close)...]
        }
        return tags
    }

    private static func opaque(_ tag: String) -> Substring {
        tag.hasPrefix("W/") ? tag.dropFirst(2) : Substring(tag)
    }
}
