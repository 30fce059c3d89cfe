package import Foundation
package import MapModel
import MapPlatform

/// Applies a patch container: builds the new tree from an old, immutable tree in an
/// empty staging directory.
package enum PatchApplier {
    /// Writes the tree the patch at `patch` describes into `newTree`, reading `oldTree`.
    ///
    /// - `newTree` is created if missing and must be empty; `oldTree` is never modified.
    /// - Unchanged, moved and duplicated files are hard links into `oldTree` (a verified
    ///   copy where linking fails, e.g. across devices).
    /// - Every old file linked or copied is checked against the SHA-256 the patch expects; an old
    ///   file used as a delta base is checked through the result (the output must match its
    ///   SHA-256, and a mismatch then names the old file when it was the cause);
    ///   every produced file is streamed to disk with bounded memory, fsync'ed and checked
    ///   against its SHA-256 and size; directories are created as needed and fsync'ed.
    /// - At the end `newTree` must hold exactly the patch's target files.
    /// - `progress` is called with the cumulative number of target bytes done (see
    ///   ``PatchManifest/targetBytes`` for the total), at least once per file.
    ///
    /// Returns the new tree's files (path, size, SHA-256), each one verified, in the
    /// patch's order (sorted by path). Throws ``PatchError``; after a throw, discard `newTree`.
    @discardableResult
    package static func apply(
        patch: URL, oldTree: URL, into newTree: URL,
        progress: ((Int64) -> Void)? = nil
    ) throws -> [FileEntry] {
        try apply(patch: patch, oldTree: oldTree, into: newTree, resumeIn: nil, progress: progress).files
    }

    /// ``apply(patch:oldTree:into:progress:)`` that builds large (segmented) files in
    /// `resumeIn` with a checkpoint per segment, so that a run killed in the middle of one
    /// continues there next time; returns the files and the bytes taken over from such an
    /// earlier run. Up to `threads` threads rebuild a see-through file's deflate streams
    /// (the bytes are the same for any number).
    package static func apply(
        patch: URL, oldTree: URL, into newTree: URL, resumeIn: URL?, threads: Int = 1,
        progress: ((Int64) -> Void)? = nil
    ) throws -> (files: [FileEntry], resumedBytes: Int64) {
        let opened = try OpenedPatch(url: patch)
        try prepareEmptyDirectory(newTree)
        if let resumeIn { try FileSystem.makeDirectories(resumeIn) }
        var run = PatchRun(
            patch: opened, oldRoot: oldTree.path, newRoot: newTree.path, resume: resumeIn?.path, threads: threads,
            progress: progress)
        for target in opened.manifest.targets {
            try run.produce(target)
        }
        try run.syncDirectories()
        try checkFileSet(of: newTree, against: opened.manifest)
        return (opened.manifest.targets.map { FileEntry(path: $0.path, size: $0.size, sha256: $0.sha256.hex) }, run.resumedBytes)
    }

    /// Creates `url` (and missing parents) if needed and requires it to be empty.
    private static func prepareEmptyDirectory(_ url: URL) throws {
        if let status = FileStatus.of(url.path) {
            guard status.kind == .directory, FileSystem.names(in: url.path).isEmpty else {
                throw PatchError.destinationNotEmpty(path: url.path)
            }
            return
        }
        try FileSystem.makeDirectories(url)
    }

    /// The finished tree must hold exactly the target paths, all regular files.
    private static func checkFileSet(of root: URL, against manifest: PatchManifest) throws {
        let expected = Set(manifest.targets.map { PathKey($0.path) })
        let found: [(path: String, size: Int64)]
        do {
            found = try FileTree.files(in: root)
        } catch let problem as FileTree.Problem {
            throw PatchError.unexpectedFiles([problem.description])
        }
        let extra = found.filter { !expected.contains(PathKey($0.path)) }.map(\.path)
        guard extra.isEmpty else { throw PatchError.unexpectedFiles(extra) }
        let foundPaths = Set(found.map { PathKey($0.path) })
        if let missing = manifest.targets.first(where: { !foundPaths.contains(PathKey($0.path)) }) {
            throw PatchError.outputMismatch(
                path: missing.path, expectedSHA256: missing.sha256.hex,
                foundSHA256: "missing", expectedSize: missing.size, foundSize: 0)
        }
    }
}
