import MapModel
import MapPlatform

/// The byte layout of a patch container.
///
/// ```
/// offset 0   8 bytes  magic "MLPATCH3" (or "MLPATCH1", "MLPATCH2": earlier manifest forms, still read)
/// offset 8   u32 LE   length of the compressed manifest (M)
/// offset 12  u32 LE   length of the manifest once decompressed
/// offset 16  M bytes  manifest: one zstd frame of the binary form below
/// then                payloads, concatenated in target order, nothing after the last
/// ```
/// Manifest, binary (varint = unsigned LEB128, string = varint length + UTF-8,
/// hash = 32 raw bytes, digest = u8 0 | u8 1 + hash). Form 3 (`MLPATCH3`), which the
/// publisher writes where it is the smallest:
/// ```
/// digest tree                                                        TreeHash of the target tree
/// varint n, n × (string path, digest)                                sources
/// varint n, n × (string path, varint size, u8 kind,                  targets other than the kept ones,
///                kind 1 copy: varint source                          sorted by path bytes
///                | 2 add: digest, u8 encoding, varint length
///                | 3 patch: digest, varint source, u8 encoding, varint length)
/// varint n, n × string path                                          deletions
/// ```
/// A site's patches leave the tree hash out (u8 0): the signed manifest's patch edge names
/// the result's tree hash, and the client passes it to the applier.
///
/// Every file of the old tree that form 3 does not name (as a target or a deletion) is
/// kept as it is: the applier lists the old tree and puts those files among the targets
/// in path order, which is the order cross-file references count in. A produced file
/// gives its digest from ``sourceDigestFrom`` bytes on and wherever its payload is
/// segmented or see-through (the digest names its resume checkpoints); a smaller one is
/// hashed as it is written and covered by the tree hash.
///
/// Form 2 (`MLPATCH2`) lists every target, kept ones as kind 0 with nothing after it, and
/// gives every produced file's digest as a bare hash. Form 1 (`MLPATCH1`) has no tree
/// hash, a bare digest for every source, and a digest after kind 0 too.
///
/// Why: a group of many files with a few changes no longer pays for the files it keeps
/// (a path each in form 2, 32 incompressible bytes more in form 1), nor 32 bytes for each
/// small file it writes, which the tree hash (signed through the patch's pin in the
/// manifest) covers. The applier hashes every old file it takes over before linking it,
/// and a large delta base keeps its digest (it is not hashed before use; its digest names
/// it when a decode fails and keys the resume checkpoints).
/// Binary rather than JSON: a target entry costs about `path + 6` bytes before
/// compression, where JSON with hex digests costs about `path + 120`.
package enum PatchFormat {
    /// The 8 bytes a container of the current form starts with; the trailing digit is the
    /// manifest form (``currentForm``).
    package static let magic: [UInt8] = magic(form: currentForm)
    /// The newest manifest form, which the publisher writes unless an older one comes out
    /// smaller.
    package static let currentForm = 3
    /// The manifest forms a reader accepts.
    package static let forms = 1...3
    /// The magic of manifest form `form` (1 to 3).
    package static func magic(form: Int) -> [UInt8] { Array("MLPATCH".utf8) + [UInt8(ascii: "0") + UInt8(form)] }
    /// Sources (forms 2 and 3) and produced files (form 3) of this size or more keep their
    /// digest (see above).
    package static let sourceDigestFrom: Int64 = 1 << 20
    /// Size of the fixed header: magic plus two u32 lengths.
    package static let headerSize = 16
    /// Largest decompressed manifest a reader accepts (bounds memory for a corrupt header).
    package static let maxManifestSize = 256 << 20

    /// Target kind byte: unchanged.
    package static let kindUnchanged: UInt8 = 0
    /// Target kind byte: copy.
    package static let kindCopy: UInt8 = 1
    /// Target kind byte: add.
    package static let kindAdd: UInt8 = 2
    /// Target kind byte: patch.
    package static let kindPatch: UInt8 = 3
}
