/// What a group's signed metadata lets one file tree hold: the bounds that every archive,
/// exported tree and patch building the group's files is held to before and while it
/// writes, so a signed but hostile blob can neither fill a disk or an inode table nor
/// the client's memory beyond what the manifest declared.
///
/// One definition for the publisher, which never makes an archive or a patch past them,
/// and the client, which refuses one that is.
package struct TreeLimits: Sendable, Hashable {
    /// Most regular files.
    package var files: Int
    /// Most bytes of all files together.
    package var bytes: Int64

    /// Limits of at most `files` files and `bytes` bytes in all.
    package init(files: Int, bytes: Int64) {
        self.files = max(0, files)
        self.bytes = max(0, bytes)
    }

    /// The most any site may declare (``SiteLimits``): for trees no signed metadata
    /// describes, such as a publisher's own.
    package static let siteMaximum = TreeLimits(files: SiteLimits.files, bytes: SiteLimits.unpackedBytes)

    /// The limits the signed `artifact` declares for its tree.
    package init(_ artifact: Artifact) {
        self.init(files: artifact.files, bytes: artifact.unpackedSize)
    }

    /// Most folders. A map tree has no empty folders, so each holds a file somewhere below
    /// it: a tree has at most one folder per file with a parent of its own plus the chains
    /// above them (`tiles/14/8529/5514.png` is two folders below `tiles/14`). Twice the
    /// files and a few thousand for the chains is far beyond any real tree and stops a
    /// flood of folders at a few thousand inodes.
    package var folders: Int { files.multipliedSaturating(by: 2).plusSaturating(4096) }

    /// Most bytes of a patch's manifest once decompressed, for a patch from a tree of
    /// `oldFiles` files to a tree within these limits: a manifest names each new file at
    /// most once and each old file at most twice (as a source and as a deletion), each
    /// entry a path of at most ``RelativePath/maxLength`` bytes and a few numbers and a
    /// digest. Never more than `cap`.
    package func patchManifestBytes(oldFiles: Int, cap: Int) -> Int {
        let entries = files.plusSaturating(max(0, oldFiles).multipliedSaturating(by: 2))
        return min(cap, entries.multipliedSaturating(by: RelativePath.maxLength + 80).plusSaturating(64 << 10))
    }

    /// The limits for a tree a patch chain passes through on its way from a tree of
    /// `old` to the one these limits describe: the manifest names no intermediate tree, and
    /// no real one holds more than the two ends together.
    package func through(_ old: TreeLimits) -> TreeLimits {
        TreeLimits(files: files.plusSaturating(old.files), bytes: bytes.plusSaturating(old.bytes))
    }

    /// The folders a tree of files at `paths` (relative, `/`-separated) has.
    package static func folders(of paths: some Sequence<String>) -> Int {
        Set(paths.lazy.flatMap(RelativePath.ancestors(of:))).count
    }
}
