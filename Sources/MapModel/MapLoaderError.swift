import Foundation
import MapPlatform

/// Every way a MapLoader operation can fail. A failed operation leaves the installed maps
/// exactly as they were.
///
/// An app shows ``errorDescription`` (what happened; `localizedDescription` is the same),
/// ``failureReason`` and ``recoverySuggestion``: short sentences without URLs or paths,
/// translatable through a `MapLoader` strings table in the app's bundle. ``description``
/// (also ``technicalDetail``) is the one-line technical message for logs: what failed, for
/// which package, file or URL, and what a developer or operator can do, in the library's
/// words (the `maploader` command prints it with its own flags and commands).
public enum MapLoaderError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A caller mistake: an empty id list, a bad coordinate, a malformed option.
    case invalidParameters(String)
    /// No package has this id in the current manifest.
    case unknownPackage(String, suggestion: String?)
    /// No data group has this id.
    case unknownGroup(String, known: [String])
    /// A required group cannot be deselected.
    case requiredGroup(String)
    /// The package is not installed, so it cannot be uninstalled or updated.
    case notInstalled(String)
    /// The operation was cancelled; nothing was changed.
    case cancelled
    /// No server is configured.
    case noServer
    /// The server could not be reached or the connection broke for good.
    case connectionFailed(url: String, reason: String)
    /// The server answered with an HTTP error status.
    case httpStatus(url: String, status: Int)
    /// The network the device is on may not carry downloads (a cellular network or one in
    /// Low Data Mode, which the configuration's network policy leaves out); `reason` names it.
    case networkNotAllowed(reason: String)
    /// Downloaded or installed bytes do not match the signed hash or length.
    case integrityFailed(what: String, detail: String)
    /// The catalog or a manifest cannot be read.
    case invalidMetadata(what: String, detail: String)
    /// An archive is malformed or holds something that may not be installed.
    case invalidArchive(package: String, group: String, detail: String)
    /// Installed maps are at one version and the site no longer has it.
    case versionUnavailable(installed: String, current: String)
    /// The data directory's file system has too little room: the change needs `needed`
    /// bytes at its peak and `available` are free (`needed` 0: the file system filled up
    /// during the change). `ways` says what would make it fit: packages to uninstall, or
    /// a group to leave out of the change and the peak without it.
    case insufficientSpace(needed: Int64, available: Int64, path: String, ways: [String] = [])
    /// The change would take the data directory past its quota (``MapLoader/Configuration/quota``
    /// or `maploader config set quota`): `needed` bytes at the change's peak, with the
    /// largest installed packages that could go to make room.
    case quotaExceeded(quota: Int64, needed: Int64, largest: [String])
    /// Reading or writing the data directory failed.
    case storageFailed(path: String, reason: String)
    /// Another process (or loader) is changing the data directory, and the configuration
    /// says not to wait (``MapLoader/Configuration/waitForLock``).
    case busy(pid: Int?)
    /// The data directory is not one MapLoader may use: a folder of other files, or one
    /// written by a newer MapLoader.
    case dataDirectoryRefused(path: String, reason: String)
    /// The catalog's signature is missing or wrong, or the key is not trusted.
    case signatureRefused(String)
    /// The catalog is older than one already accepted, or has expired.
    case rollbackRefused(String)

    public var description: String {
        switch self {
        case .invalidParameters(let detail):
            return "invalid parameters: \(detail)"
        case .unknownPackage(let id, let suggestion):
            let hint = suggestion.map { "did you mean '\($0)'? " } ?? ""
            return "unknown package '\(id)': \(hint)the package tree lists every package id"
        case .unknownGroup(let id, let known):
            return "unknown data group '\(id)': known groups are \(known.joined(separator: ", "))"
        case .requiredGroup(let id):
            return "data group '\(id)' is required and cannot be deselected"
        case .notInstalled(let id):
            return "package '\(id)' is not installed: install it first"
        case .cancelled:
            return "cancelled: nothing was changed"
        case .noServer:
            return "no server configured: set the site's address in the loader's configuration"
        case .connectionFailed(let url, let reason):
            return "cannot download \(url): \(reason); check the server address and network, then retry"
        case .httpStatus(let url, let status):
            let hint =
                status == 404
                ? "the site is missing this file; ask the publisher to republish"
                : "the server failed; retry later"
            return "server answered HTTP \(status) for \(url): \(hint)"
        case .networkNotAllowed(let reason):
            return "downloads are not allowed on this network: \(reason); connect to Wi-Fi or a wired network, or allow this kind of network"
        case .integrityFailed(let what, let detail):
            return "integrity check failed for \(what): \(detail); nothing was installed, retry or report it to the publisher"
        case .invalidMetadata(let what, let detail):
            return "cannot read \(what): \(detail); the site is malformed, ask the publisher to republish"
        case .invalidArchive(let package, let group, let detail):
            return "archive of \(package)/\(group) refused: \(detail); nothing was installed"
        case .versionUnavailable(let installed, let current):
            return "installed maps are version \(installed), which the site no longer has (current is \(current)): update them first"
        case .insufficientSpace(let needed, _, let path, _) where needed <= 0:
            return "not enough disk space in \(path): the file system is full (no blocks, inodes or quota left); free some space and retry"
        case .insufficientSpace(let needed, let available, let path, let ways):
            let fix = ways.isEmpty ? "free some space" : "free some space (\(ways.joined(separator: "; or ")))"
            return
                "not enough disk space in \(path): need \(ByteFormat.string(needed)), \(ByteFormat.string(available)) free; \(fix) and retry"
        case .quotaExceeded(let quota, let needed, let largest):
            let room =
                largest.isEmpty
                ? "raise the quota"
                : "uninstall one of the largest packages (\(largest.joined(separator: ", "))) or raise the quota"
            return
                "refused: this change needs \(ByteFormat.string(needed)) at its peak, over the data directory's quota of \(ByteFormat.string(quota)); \(room)"
        case .storageFailed(let path, let reason):
            return "cannot write \(path): \(reason); check permissions and free space of the data directory"
        case .busy(let pid):
            // Two loaders of one app share its process id: the holder is then another loader.
            let holder =
                pid.map { $0 == Int(FileSystem.processID) ? "another loader in this process" : "another maploader (pid \($0))" }
                ?? "another maploader"
            return "\(holder) is changing the data directory: retry when it has finished, or wait for it"
        case .dataDirectoryRefused(let path, let reason):
            return "cannot use \(path) as the data directory: \(reason)"
        case .signatureRefused(let detail):
            return "catalog signature refused: \(detail)"
        case .rollbackRefused(let detail):
            return "catalog refused: \(detail)"
        }
    }
}
