import Foundation
import MapDelta
import MapModel
import MapPlatform

#if PackagedZstd
    import libzstd
#else
    import CZstd
#endif

/// Writes a container: header, zstd-compressed manifest, then the payloads.
package enum PatchContainerWriter {
    /// Compresses `manifest` (one frame with its content size) at `level`. No checksum: the
    /// signed catalog pins the whole container's SHA-256.
    package static func compressManifest(_ manifest: [UInt8], level: Int) throws -> [UInt8] {
        do {
            return try ZstdFrame.compress(manifest, level: level, checksum: false)
        } catch {
            throw PatchBuildError.codec(path: "manifest", message: "\(error)")
        }
    }

    /// The 16-byte header for a compressed manifest of `compressed` bytes that expands to
    /// `raw`, in manifest form `form`.
    package static func header(compressed: Int, raw: Int, form: Int = PatchFormat.currentForm) -> [UInt8] {
        var header = PatchFormat.magic(form: form)
        for value in [UInt32(compressed), UInt32(raw)] {
            for shift in stride(from: 0, to: 32, by: 8) { header.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
        }
        return header
    }

    /// Writes the container to `output` atomically (a temporary file beside it, fsync'ed,
    /// then renamed): header (manifest form `form`), `compressedManifest`, then the bytes
    /// of `payloads`.
    package static func write(
        rawManifestCount: Int, compressedManifest: [UInt8], payloads: String,
        to output: URL, form: Int = PatchFormat.currentForm
    ) throws {
        guard rawManifestCount <= PatchFormat.maxManifestSize else {
            throw PatchBuildError.codec(path: "manifest", message: "manifest of \(rawManifestCount) bytes exceeds the format's limit")
        }
        let temporary = output.path + ".partial"
        let out = try SystemFile.createOrTruncate(temporary)
        let header = header(compressed: compressedManifest.count, raw: rawManifestCount, form: form)
        try header.withUnsafeBytes { try out.writeAll($0) }
        try compressedManifest.withUnsafeBytes { try out.writeAll($0) }
        try SystemFile.openForReading(payloads).forEachChunk { try out.writeAll($0) }
        try out.sync()
        try FileSystem.rename(temporary, output.path)
    }
}
