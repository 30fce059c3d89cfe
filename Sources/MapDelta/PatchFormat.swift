import MapModel
import MapPlatform
/// The byte layout of a patch container.
///
/// ```
/// offset 0   8 bytes  magic "MLPATCH2" (or "MLPATCH1": the first manifest form, still read)
/// offset 8   u32 LE   length of the compressed manifest (M)
/// offset 12  u32 LE   length of the manifest once decompressed
/// offset 16  M bytes  manifest: one zstd frame (with checksum) of the binary form below
/// then                payloads, concatenated in target order, nothing after the last
/// ```
/// Manifest, binary (varint = unsigned LEB128, string = varint length + UTF-8,
/// hash = 32 raw bytes). Form 2 (`MLPATCH2`), which the publisher writes:
/// ```
/// hash tree                                                          TreeHash of the target tree
/// varint n, n × (string path, u8 0 | u8 1 + hash sha256)              sources, digest optional
/// varint n, n × (string path, varint size, u8 kind,                  targets
///                kind 0 unchanged: nothing (the old file at the path, as it is)
///                | 1 copy: varint source (the source's bytes, as they are)
///                | 2 add: hash sha256, u8 encoding, varint length
///                | 3 patch: hash sha256, varint source, u8 encoding, varint length)
/// varint n, n × string path                                          deletions
/// ```
/// Form 1 (`MLPATCH1`) has no tree hash, a digest for every source, and `hash sha256`
/// after kind 0 too. Form 2 drops the digests of files taken over as they are: the
/// applier hashes those old files anyway before it links them, and the tree hash (signed
/// through the patch's pin in the manifest) then covers them, so a group of many files with
/// a few changes no longer pays 32 incompressible bytes for each one kept. Produced files
/// keep their digest (a wrong one is named as it is written), and so do sources from
/// ``sourceDigestFrom`` bytes on (a large delta base is not hashed before use; its digest
/// names it when a decode fails and keys the resume checkpoints).
/// Binary rather than JSON: a target entry costs about `path + 36` bytes before
/// compression, where JSON with hex digests costs about `path + 120`.
package enum PatchFormat {
    /// The 8 bytes a container of the current form starts with; the trailing digit is the
    /// manifest form (``currentForm``).
    package static let magic: [UInt8] = magic(form: currentForm)
    /// The manifest form the publisher writes.
    package static let currentForm = 2
    /// The manifest forms a reader accepts.
    package static let forms = 1...2
    /// The magic of manifest form `form` (1 or 2).
    package static func magic(form: Int) -> [UInt8] { Array("MLPATCH".utf8) + [UInt8(ascii: "0") + UInt8(form)] }
    /// Sources of this size or more keep their digest in form 2 (see above).
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
