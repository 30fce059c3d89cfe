/// Why building a patch failed (I/O failures surface as `SystemError`).
package enum PatchBuildError: Error, CustomStringConvertible, Equatable, Sendable {
    /// A release folder cannot be read as a file tree (a symlink, device or unreadable folder).
    case unsupportedFile(detail: String)
    /// A file name cannot be carried in a patch (see the container's path rules).
    case unsupportedPath(path: String)
    /// A file pair cannot be delta-encoded (size beyond zstd's window, empty base).
    case deltaUnavailable(path: String, reason: String)
    /// zstd refused to compress a file.
    case codec(path: String, message: String)
    /// A file changed size while it was being encoded.
    case fileChanged(path: String)

    /// A one-line explanation with the next step to take.
    package var description: String {
        switch self {
        case .unsupportedFile(let detail):
            return "\(detail): patches carry regular files only; replace it with a file or remove it"
        case .unsupportedPath(let path):
            return "file name \(path) cannot be carried in a patch (empty, '.' or '..' segment, backslash or too long): rename it"
        case .deltaUnavailable(let path, let reason):
            return "cannot delta-encode \(path): \(reason); encode it with plain zstd instead"
        case .codec(let path, let message):
            return "zstd failed to compress \(path): \(message); check the zstd level and free memory"
        case .fileChanged(let path):
            return "\(path) changed while the patch was being built: stop writing to the release folder and build again"
        }
    }
}
