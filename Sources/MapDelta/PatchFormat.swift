import MapModel
import MapPlatform
/// The byte layout of a patch container.
///
/// ```
/// offset 0   8 bytes  magic "MLPATCH1"
/// offset 8   u32 LE   length of the compressed manifest (M)
/// offset 12  u32 LE   length of the manifest once decompressed
/// offset 16  M bytes  manifest: one zstd frame (with checksum) of the binary form below
/// then                payloads, concatenated in target order, nothing after the last
/// ```
/// Manifest, binary (varint = unsigned LEB128, string = varint length + UTF-8,
/// hash = 32 raw bytes):
/// ```
/// varint n, n × (string path, hash sha256)                          sources
/// varint n, n × (string path, varint size, u8 kind,                  targets
///                kind 0 unchanged: hash sha256
///                | 1 copy: varint source (the digest is the source's)
///                | 2 add: hash sha256, u8 encoding, varint length
///                | 3 patch: hash sha256, varint source, u8 encoding, varint length)
/// varint n, n × string path                                          deletions
/// ```
/// Binary rather than JSON: a target entry costs about `path + 36` bytes before
/// compression, where JSON with hex digests costs about `path + 120`.
package enum PatchFormat {
    /// The 8 bytes every container starts with; the trailing digit is the format version.
    package static let magic: [UInt8] = Array("MLPATCH1".utf8)
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
