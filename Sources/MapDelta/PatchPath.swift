import MapModel
import MapPlatform

/// The rules for paths inside a patch container: the project's ``RelativePath`` rules
/// (relative, no empty, `.` or `..` segments, no NUL or backslash, length limits), and
/// already in normal form, so every path has exactly one spelling.
package enum PatchPath {
    /// Throws ``PatchError/unsafePath(_:)`` unless `path` passes ``isSafe(_:)``.
    package static func validate(_ path: String) throws {
        guard isSafe(path) else { throw PatchError.unsafePath(path) }
    }

    /// Whether `path` is a safe relative path in normal form.
    package static func isSafe(_ path: String) -> Bool {
        RelativePath.normalized(path) == path
    }
}
