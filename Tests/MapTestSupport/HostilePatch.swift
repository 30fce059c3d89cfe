import Foundation

/// Patch containers a compromised publisher could sign, each built to ask for more than
/// the group's signed metadata declares (issue "Hostile signed payloads").
package enum HostilePatch {
    /// A container holding `manifest` (form 3) and `payloads`, written to `url`.
    package static func write(_ manifest: PatchManifest, payloads: [UInt8] = [], to url: URL) throws {
        let raw = PatchManifestEncoder.encode(manifest)
        let compressed = try PatchContainerWriter.compressManifest(raw, level: 3)
        try Data(PatchContainerWriter.header(compressed: compressed.count, raw: raw.count) + compressed + payloads).write(to: url)
    }

    /// A patch that adds `paths`, each a file of one stored byte.
    package static func adding(_ paths: [String], to url: URL) throws {
        let targets = paths.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map {
            PatchManifest.Target(path: $0, size: 1, sha256: nil, origin: .add(.init(encoding: .stored, length: 1)))
        }
        let manifest = PatchManifest(sources: [], targets: targets, deletions: [], treeHash: nil, keepsUnlisted: true)
        try write(manifest, payloads: [UInt8](repeating: 0x61, count: targets.count), to: url)
    }

    /// A patch of one file declared `size` bytes long, whose payload is a zstd frame of
    /// zeros that never ends before the declared size (it once filled a 1 GB file system).
    package static func hugeTarget(_ size: Int64, to url: URL) throws {
        let frame = try ZstdFrame.compress([UInt8](repeating: 0, count: 1 << 16), level: 3)
        let target = PatchManifest.Target(
            path: "huge.bin", size: size, sha256: SHA256Hash(bytes: [UInt8](repeating: 7, count: 32)),
            origin: .add(.init(encoding: .zstd, length: Int64(frame.count))))
        try write(PatchManifest(sources: [], targets: [target], deletions: [], treeHash: nil, keepsUnlisted: true), payloads: frame, to: url)
    }

    /// A patch whose manifest decompresses to `rawLength` bytes of zeros (255 MiB from 8 kB).
    package static func manifestOfZeros(_ rawLength: Int, to url: URL) throws {
        let zeros = try ZstdFrame.compress([UInt8](repeating: 0, count: rawLength), level: 19, checksum: false)
        try Data(PatchContainerWriter.header(compressed: zeros.count, raw: rawLength) + zeros).write(to: url)
    }
}
