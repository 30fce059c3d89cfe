import MapPlatform

/// Checks a relative path taken from untrusted input (an archive entry, a patch).
package enum RelativePath {
    /// Most bytes of a path; a component may have at most 255.
    package static let maxLength = 4096

    /// `path` normalised (leading `./` and a trailing `/` dropped), or `nil` when it is
    /// empty, absolute, has `.`, `..` or empty components, a NUL, or a backslash.
    package static func normalized(_ path: String) -> String? {
        var path = Substring(path)
        while path.hasPrefix("./") { path = path.dropFirst(2) }
        if path.hasSuffix("/") { path = path.dropLast() }
        guard !path.isEmpty, !path.hasPrefix("/"), path.utf8.count <= maxLength,
            !path.contains("\0"), !path.contains("\\")
        else { return nil }
        let components = path.split(separator: "/", omittingEmptySubsequences: false)
        guard components.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." && $0.utf8.count <= 255 })
        else { return nil }
        return String(path)
    }

    /// The folder prefixes of `path`: `a/b/c` gives `a` and `a/b`.
    package static func ancestors(of path: String) -> [Substring] {
        var result: [Substring] = []
        var index = path.startIndex
        while let slash = path[index...].firstIndex(of: "/") {
            result.append(path[path.startIndex..<slash])
            index = path.index(after: slash)
        }
        return result
    }
}
