package import Foundation
package import MapModel
package import MapPlatform

#if PackagedZstd
    import libzstd
#else
    import CZstd
#endif
/// Reading patch containers (layout in ``PatchFormat``).
package enum PatchContainer {
    /// The manifest of the container at `url`, after its header, manifest and payload
    /// bounds have been checked; for inspecting a patch without applying it.
    package static func manifest(at url: URL) throws -> PatchManifest {
        try OpenedPatch(url: url).manifest
    }
}

/// A container opened for applying: the open file and its checked manifest, whose
/// payloads exactly fill the file after the manifest.
package final class OpenedPatch {
    /// The container file.
    package let file: SystemFile
    /// The checked manifest, payload offsets filled in; for form 3, with the old tree's
    /// kept files once ``keepUnlisted(of:)`` has run.
    package private(set) var manifest: PatchManifest

    /// Opens `url` and reads the header and manifest. Every length is checked against the
    /// file size, and the manifest against what a patch from a tree of `oldFiles` files to
    /// one within `limits` can need (``TreeLimits/patchManifestBytes(oldFiles:cap:)``),
    /// before anything is allocated for it.
    package init(url: URL, limits: TreeLimits = .siteMaximum, oldFiles: Int = SiteLimits.files) throws {
        let file = try SystemFile.openForReading(url.path)
        self.file = file
        let size = try file.size()
        var header = [UInt8](repeating: 0, count: PatchFormat.headerSize)
        let got = try header.withUnsafeMutableBytes { try file.readChunk(into: $0, at: 0) }
        guard got >= PatchFormat.magic.count,
            let form = PatchFormat.forms.first(where: { header.starts(with: PatchFormat.magic(form: $0)) })
        else {
            throw PatchError.notAPatch(path: url.path)
        }
        guard got == PatchFormat.headerSize else {
            throw PatchError.truncated(detail: "header is \(got) of \(PatchFormat.headerSize) bytes")
        }
        let compressedLength = Int(Self.u32(header, at: 8))
        let rawLength = Int(Self.u32(header, at: 12))
        guard rawLength <= PatchFormat.maxManifestSize,
            compressedLength <= ZSTD_compressBound(PatchFormat.maxManifestSize)
        else {
            throw PatchError.corrupt(detail: "manifest lengths \(compressedLength)/\(rawLength) out of range")
        }
        let manifestLimit = limits.patchManifestBytes(oldFiles: oldFiles, cap: PatchFormat.maxManifestSize)
        guard rawLength <= manifestLimit else {
            throw PatchError.beyondLimits(detail: "a manifest of \(rawLength) bytes, at most \(manifestLimit) for its trees")
        }
        let payloadStart = Int64(PatchFormat.headerSize + compressedLength)
        guard payloadStart <= size else {
            throw PatchError.truncated(detail: "manifest needs \(compressedLength) bytes, container has \(size - Int64(PatchFormat.headerSize))")
        }
        var compressed = [UInt8](repeating: 0, count: compressedLength)
        _ = try compressed.withUnsafeMutableBytes {
            try file.readChunk(into: $0, at: Int64(PatchFormat.headerSize))
        }
        let raw = try Self.decompressManifest(compressed, rawLength: rawLength)
        manifest = try PatchManifestDecoder.decode(
            raw, form: form, payloadStart: payloadStart, containerSize: size, limits: limits, oldFiles: oldFiles)
        self.limits = limits
    }

    /// What the signed manifest lets the result hold.
    package let limits: TreeLimits

    /// Adds the files of the old tree (`oldFiles`, as listed) that a form-3 manifest does
    /// not name to its targets, as kept (``PatchManifestDecoder/keepingUnlisted(_:oldFiles:limits:)``);
    /// any other manifest stays as it is.
    package func keepUnlisted(_ oldFiles: [(path: String, size: Int64)]) throws {
        manifest = try PatchManifestDecoder.keepingUnlisted(manifest, oldFiles: oldFiles, limits: limits)
    }

    /// Decompresses the manifest frame, whose header must declare exactly `rawLength`.
    private static func decompressManifest(_ compressed: [UInt8], rawLength: Int) throws -> [UInt8] {
        do {
            return try ZstdFrame.decompress(compressed, limit: rawLength, exactly: rawLength)
        } catch {
            throw PatchError.corrupt(detail: "manifest does not decompress to its \(rawLength) bytes (\(error))")
        }
    }

    /// A little-endian u32 at `offset`.
    private static func u32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
    }
}
