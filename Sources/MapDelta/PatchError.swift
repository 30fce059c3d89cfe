import Foundation
package import MapModel
import MapPlatform

/// Why reading or applying a patch container failed.
///
/// Every message is one line that says what failed and what to do next; most failures
/// mean "this patch cannot be used here, fall back to a full download".
package enum PatchError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The file does not start with a patch magic (`MLPATCH3`, or the earlier `MLPATCH1` and
    /// `MLPATCH2`: `PatchFormat.forms`).
    case notAPatch(path: String)
    /// The container ends before the data its header or manifest declares.
    case truncated(detail: String)
    /// A section of the container does not decode or contradicts itself.
    case corrupt(detail: String)
    /// The patch asks for more than the signed manifest declares for the group's tree
    /// (files, bytes, folders, or a manifest larger than such a tree's).
    case beyondLimits(detail: String)
    /// A path in the container is absolute, contains `..`, `.` or empty segments, or a NUL.
    case unsafePath(String)
    /// An old file the patch reads is missing (or not a regular file) in the installed tree.
    case sourceMissing(path: String)
    /// An old file the patch reads has other bytes than the patch was built against.
    case sourceMismatch(path: String, expectedSHA256: String, foundSHA256: String)
    /// A file the patch produced does not have the target's SHA-256 and size.
    case outputMismatch(
        path: String, expectedSHA256: String, foundSHA256: String,
        expectedSize: Int64, foundSize: Int64)
    /// zstd refused a payload while decoding it.
    case codec(path: String, message: String)
    /// The directory the new tree should be written into already holds entries.
    case destinationNotEmpty(path: String)
    /// After applying, the new tree holds files the target listing does not have.
    case unexpectedFiles([String])
    /// The applied files (digests of files taken over from the old tree included) do not
    /// have the tree hash the patch names: an old file the patch gives no digest for had
    /// other bytes than the publisher's.
    case treeMismatch(expected: String, found: String)

    /// A one-line explanation with the next step to take.
    package var description: String {
        switch self {
        case .notAPatch(let path):
            return "\(path) is not a MapLoader patch (bad magic): download it again or use the full archive"
        case .truncated(let detail):
            return "patch is truncated (\(detail)): download it again or fall back to a full download"
        case .corrupt(let detail):
            return "patch is corrupt (\(detail)): download it again or fall back to a full download"
        case .beyondLimits(let detail):
            return "patch asks for more than the signed manifest declares (\(detail)): refusing it; fall back to a full download"
        case .unsafePath(let path):
            return
                "patch names an unsafe path \(Self.quoted(path)) (absolute, '..', '.', empty segment or NUL): refusing it; fall back to a full download"
        case .sourceMissing(let path):
            return
                "patch expects old file \(path), which is missing or not a regular file: the installed files were changed; repair the installation or fall back to a full download"
        case .sourceMismatch(let path, let expected, let found):
            return
                "patch expects old file \(path) with sha256 \(Self.short(expected)), found \(Self.short(found)): the installed files were changed; fall back to a full download"
        case .outputMismatch(let path, let expected, let found, let expectedSize, let foundSize):
            return
                "patched file \(path) came out as sha256 \(Self.short(found)) (\(foundSize) bytes), expected \(Self.short(expected)) (\(expectedSize) bytes): the patch is damaged; download it again or fall back to a full download"
        case .codec(let path, let message):
            return
                "cannot decode the patch payload for \(path) (zstd: \(message)): the patch is damaged; download it again or fall back to a full download"
        case .destinationNotEmpty(let path):
            return "destination \(path) is not empty: apply a patch into a new, empty staging directory"
        case .treeMismatch(let expected, let found):
            return
                "the patched tree hashes to \(Self.short(found)), the patch expects \(Self.short(expected)): an installed file the patch reads was changed, or the patch is damaged; fall back to a full download"
        case .unexpectedFiles(let paths):
            let shown = paths.prefix(3).joined(separator: ", ")
            return
                "the patched tree has \(paths.count) file(s) the target does not list (\(shown)\(paths.count > 3 ? ", …" : "")): discard the staging directory and retry"
        }
    }

    /// The first 12 hex digits of a digest, enough to tell two apart in a message; other
    /// words (a size, "missing") as they are.
    private static func short(_ hex: String) -> String {
        hex.count == 64 ? String(hex.prefix(12)) + "…" : hex
    }

    /// A path quoted for a message, with control characters (such as NUL) made visible.
    static func quoted(_ path: String) -> String {
        "\""
            + path.unicodeScalars.map { $0.value < 0x20 ? "\\u{\(String($0.value, radix: 16))}" : String($0) }
            .joined() + "\""
    }
}

extension PatchError: MapLoaderErrorConvertible {
    /// A patch that does not read or apply: the update falls back to the full archive.
    package var mapLoaderError: MapLoaderError { .integrityFailed(what: "a patch", detail: description) }
}
