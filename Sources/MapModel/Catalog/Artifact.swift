import MapPlatform

/// One leaf's data group as published: a full archive plus the patches that reach it.
///
/// Every byte a client fetches is pinned by `sha256` and `size`. `treeHash` names the
/// unpacked file tree (a SHA-256 over the files' sorted paths, sizes and digests), so a client
/// can tell which installed trees a
/// patch applies to.
package struct Artifact: Sendable, Hashable, Codable {
    /// SHA-256 of the archive blob, lowercase hex.
    package var sha256: String
    /// Length of the archive blob in bytes.
    package var size: Int64
    /// The archive's container and compression.
    package var format: ArchiveFormat
    /// Total bytes of the unpacked files; extraction refuses to write more.
    package var unpackedSize: Int64
    /// Number of files in the archive; extraction refuses more entries.
    package var files: Int
    /// The tree hash of the unpacked files.
    package var treeHash: String
    /// Patches that produce this tree from an older one.
    package var patches: [PatchEdge]?

    /// An artifact description.
    package init(
        sha256: String, size: Int64, format: ArchiveFormat, unpackedSize: Int64, files: Int,
        treeHash: String, patches: [PatchEdge]? = nil
    ) {
        self.sha256 = sha256
        self.size = size
        self.format = format
        self.unpackedSize = unpackedSize
        self.files = files
        self.treeHash = treeHash
        self.patches = patches
    }
}

/// A patch blob that turns the tree of version `from` into the tree of version `to`.
package struct PatchEdge: Sendable, Hashable, Codable {
    /// Version label the patch starts from.
    package var from: String
    /// Version label the patch produces.
    package var to: String
    /// SHA-256 of the patch blob.
    package var sha256: String
    /// Length of the patch blob in bytes.
    package var size: Int64
    /// The tree hash the installed files must have before the patch.
    package var fromTreeHash: String
    /// The tree hash of the files after the patch.
    package var toTreeHash: String
    /// Why some files in the patch are byte-level rather than smaller encodings, one line
    /// per file (e.g. deflate streams zlib does not reproduce); `nil` when none.
    package var notes: [String]?
    /// Disk space applying the patch takes besides the installed files: the files it
    /// writes (unchanged files are hard links), with a block of slack each; `nil` in
    /// manifests that predate it (a client then counts the whole unpacked tree).
    package var writeBytes: Int64?
    /// The same where the data directory's file system clones files (btrfs, XFS with
    /// reflink, APFS): a large patched file starts as a clone of its old version and only
    /// its changed blocks are written; `nil` in manifests that predate it.
    package var cloneWriteBytes: Int64?
    /// The optional codecs the patch's payloads need beyond zstd and zlib (`"lzma"`), which
    /// a client build may lack; `nil` when none, and in manifests that predate it (a client
    /// then finds out while applying, and falls back to the full archive).
    package var codecs: [String]?

    /// A patch edge.
    package init(from: String, to: String, sha256: String, size: Int64, fromTreeHash: String, toTreeHash: String) {
        self.from = from
        self.to = to
        self.sha256 = sha256
        self.size = size
        self.fromTreeHash = fromTreeHash
        self.toTreeHash = toTreeHash
    }
}

/// The container and compression of a full archive.
package enum ArchiveFormat: String, Sendable, Hashable, Codable, CaseIterable {
    /// A tar stream compressed with zstd.
    case tarZstd = "tar.zst"
    /// A tar stream compressed with gzip.
    case tarGzip = "tar.gz"
}

extension PackageNode {
    /// This tree with only the patch edges `keep` accepts (a client drops those it cannot
    /// apply before planning).
    package func keepingPatchEdges(where keep: (PatchEdge) -> Bool) -> PackageNode {
        var node = self
        node.children = children?.map { $0.keepingPatchEdges(where: keep) }
        for (group, artifact) in artifacts ?? [:] {
            guard let patches = artifact.patches else { continue }
            let kept = patches.filter(keep)
            guard kept.count != patches.count else { continue }
            node.artifacts?[group]?.patches = kept.isEmpty ? nil : kept
        }
        return node
    }
}
