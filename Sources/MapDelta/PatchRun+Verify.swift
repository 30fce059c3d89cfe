import Foundation
import MapModel
import MapPlatform

/// Old files a patch reads or keeps: checked against their digests before they are used.
extension PatchRun {
    /// After a decode failed: the error naming `source` when its bytes (`bytes`, else read
    /// from the old tree) are not the ones the patch expects, so the message says which
    /// side was wrong; `nil` when the old file is right (the payload is at fault).
    func mismatch(of source: PatchManifest.Source, bytes: UnsafeRawBufferPointer?) -> PatchError? {
        let found =
            verified[PathKey(source.path)]
            ?? bytes.map(SHA256Hash.of)
            ?? (try? FileHashing.hash(ofFile: oldRoot + "/" + source.path).hash)
        // Without a digest (a small source of a form-2 patch) nor a recorded one, nothing says
        // which side was wrong.
        guard let expected = source.sha256 ?? recorded[PathKey(source.path)], found != expected else { return nil }
        return .sourceMismatch(path: source.path, expectedSHA256: expected.hex, foundSHA256: found?.hex ?? "unreadable")
    }

    /// Hashes the old file (once per path), requires the target's digest where the patch
    /// gives one, then links it; returns the digest found, the target's (``digests``).
    mutating func linkVerified(oldPath: String, target: PatchManifest.Target, destination: String) throws -> SHA256Hash {
        let source = oldRoot + "/" + oldPath
        guard let status = FileStatus.of(source), status.kind == .file else {
            throw PatchError.sourceMissing(path: oldPath)
        }
        let found: SHA256Hash
        if let known = verified[PathKey(oldPath)] {
            found = known
        } else {
            found = try FileHashing.hash(ofFile: source).hash
            verified[PathKey(oldPath)] = found
        }
        let expected = target.sha256 ?? recorded[PathKey(oldPath)]
        guard found == expected ?? found, status.size == target.size else {
            // Without a digest in the patch or the caller's record only the size can be off.
            throw PatchError.sourceMismatch(
                path: oldPath, expectedSHA256: expected?.hex ?? "any, \(target.size) bytes long",
                foundSHA256: expected == nil ? "\(status.size) bytes" : found.hex)
        }
        try TreeLinker.linkOrCopy(
            source: source, destination: destination, displayPath: target.path,
            sha256: found, size: target.size, durable: durable)
        done += target.size
        return found
    }
}
