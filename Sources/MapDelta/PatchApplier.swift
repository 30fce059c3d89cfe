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
    /// - Every old file linked or copied is checked against the SHA-256 the patch expects
    ///   (in forms 2 and 3, a file it gives no digest for is checked through the tree hash);
    ///   an old file used as a delta base is checked through the result (the output must
    ///   match its SHA-256, and a mismatch then names the old file when it was the cause);
    ///   every produced file is streamed to disk with bounded memory and checked against its
    ///   SHA-256 (form 3: a small one, through the tree hash) and size; directories are
    ///   created as needed. Files and directories are fsync'ed only when `durable` is true
    ///   (the client passes false and flushes the whole generation once). Form 3 keeps the
    ///   old tree's files it does not name.
    /// - At the end `newTree` must hold exactly the patch's target files, and (forms 2 and
    ///   3) their digests and sizes must have the patch's ``PatchManifest/treeHash``.
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
    /// (the bytes are the same for any number). `oldFiles`, the old tree's files as the
    /// caller recorded them (its installed index), lets a form-2 patch name an old file that
    /// changed where the patch itself gives no digest for it. `treeHash`, the tree hash the
    /// result must have as the signed manifest names it, is required by a form-3 patch that
    /// leaves it out (a site's patch) and must agree with one that carries it. With
    /// `durable` false no file or directory of `newTree` is fsync'ed: for a caller that
    /// flushes the file system before the tree is used (one `syncfs`, as a generation's
    /// commit does, instead of one `fsync` per file), or whose tree is scratch. `limits`,
    /// what the signed manifest declares for the result, bounds everything the patch asks
    /// for before it is written (files, bytes, folders, the manifest itself): a patch past
    /// them throws ``PatchError/beyondLimits(detail:)`` having written nothing.
    package static func apply(
        patch: URL, oldTree: URL, into newTree: URL, resumeIn: URL?, threads: Int = 1,
        oldFiles: [FileEntry] = [], treeHash given: String? = nil, limits: TreeLimits = .siteMaximum, durable: Bool = true,
        progress: ((Int64) -> Void)? = nil
    ) throws -> (files: [FileEntry], resumedBytes: Int64) {
        // The old tree's files bound the manifest's sources and deletions (the caller's record
        // says how many, else a listing), and form 3 keeps those it does not name; the tree
        // is listed once, and only where that is needed. A tree that cannot be listed fails
        // the patch below, or at the first old file it reads, whatever the manifest says.
        var listed: Result<[(path: String, size: Int64)], any Error>?
        func listing() -> Result<[(path: String, size: Int64)], any Error> {
            if let listed { return listed }
            let result = Result { try FileTree.files(in: oldTree.path) }
            listed = result
            return result
        }
        let oldCount = oldFiles.isEmpty ? (try? listing().get())?.count ?? SiteLimits.files : oldFiles.count
        let opened = try OpenedPatch(url: patch, limits: limits, oldFiles: oldCount)
        let expectedTree = opened.manifest.treeHash?.hex ?? given
        if let given, given != expectedTree {
            throw PatchError.corrupt(detail: "its tree hash is not the one the manifest's patch edge names")
        }
        if opened.manifest.keepsUnlisted, expectedTree == nil {
            throw PatchError.corrupt(detail: "the patch leaves the result's tree hash to the manifest's patch edge, and none was given")
        }
        if opened.manifest.keepsUnlisted {
            do {
                try opened.keepUnlisted(try listing().get())
            } catch let problem as FileTree.Problem {
                throw PatchError.unexpectedFiles([problem.description])
            }
        }
        try prepareEmptyDirectory(newTree)
        if let resumeIn { try FileSystem.makeDirectories(resumeIn) }
        var run = PatchRun(
            patch: opened, oldRoot: oldTree.path, newRoot: newTree.path, resume: resumeIn?.path, threads: threads,
            recorded: Dictionary(
                oldFiles.compactMap { entry in SHA256Hash(hex: entry.sha256).map { (PathKey(entry.path), $0) } },
                uniquingKeysWith: { first, _ in first }),
            durable: durable, progress: progress)
        for target in opened.manifest.targets {
            try run.produce(target)
        }
        try run.syncDirectories()
        try checkFileSet(of: newTree, against: opened.manifest)
        let files = zip(opened.manifest.targets, run.digests).map { FileEntry(path: $0.path, size: $0.size, sha256: $1.hex) }
        if let expected = expectedTree {
            let found = TreeHash.of(files)
            guard found == expected else {
                // A small file of form 3 is checked here only: name the old file it was made
                // from where the patch or the caller's record says what that file was.
                for source in opened.manifest.sources {
                    if let mismatch = run.mismatch(of: source, bytes: nil) { throw mismatch }
                }
                throw PatchError.treeMismatch(expected: expected, found: found)
            }
        }
        return (files, run.resumedBytes)
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
                path: missing.path, expectedSHA256: missing.sha256?.hex ?? "as the old file",
                foundSHA256: "missing", expectedSize: missing.size, foundSize: 0)
        }
    }
}
