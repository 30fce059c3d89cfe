import Foundation

#if PackagedZstd && SystemZstd
    #error("choose one of the traits SystemZstd and PackagedZstd: swift build --disable-default-traits --traits PackagedZstd")
#elseif PackagedZstd
    @preconcurrency import libzstd
#elseif SystemZstd
    @preconcurrency import CZstd
#else
    #error("choose one of the traits SystemZstd (the default) and PackagedZstd")
#endif

/// One whole zstd frame in memory, with its content size (and a checksum unless the
/// caller pins the bytes another way): for small metadata (patch-container manifests,
/// site manifests) and a suffix delta's streams, never for whole map files.
package enum ZstdFrame {
    /// Why a frame could not be made or read.
    package struct Failure: Error, CustomStringConvertible {
        /// One line.
        package let description: String
    }

    /// The zstd library's version ("1.5.4"): another version may compress the same bytes
    /// into other frames (never read them differently).
    package static var libraryVersion: String { String(cString: ZSTD_versionString()) }

    /// `bytes` as one frame at `level`; with a `prefix` (an earlier version of the same
    /// small file), a delta that only ``decompress(_:limit:exactly:prefix:)`` with the same
    /// prefix reads.
    ///
    /// `checksum: false` leaves out the frame's 4-byte checksum, for bytes whose result a
    /// SHA-256 pin checks anyway (a patch blob, a file a patch rebuilds, a catalog or
    /// manifest delta): there the checksum catches nothing the pin does not, and a small
    /// update pays its 4 bytes per frame. Decoders read frames with and without it.
    package static func compress(_ bytes: [UInt8], level: Int, prefix: [UInt8] = [], checksum: Bool = true) throws -> [UInt8] {
        guard let cctx = ZSTD_createCCtx() else { throw Failure(description: "zstd is out of memory") }
        defer { ZSTD_freeCCtx(cctx) }
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, Int32(level))
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, checksum ? 1 : 0)
        var out = [UInt8](repeating: 0, count: ZSTD_compressBound(bytes.count))
        let n = out.withUnsafeMutableBytes { dst in
            bytes.withUnsafeBytes { src in
                prefix.withUnsafeBytes { prefix in
                    if prefix.count > 0 { ZSTD_CCtx_refPrefix(cctx, prefix.baseAddress, prefix.count) }
                    return ZSTD_compress2(cctx, dst.baseAddress, dst.count, src.baseAddress, src.count)
                }
            }
        }
        guard ZSTD_isError(n) == 0 else { throw Failure(description: String(cString: ZSTD_getErrorName(n))) }
        return Array(out[0..<n])
    }

    /// The content of a frame that must declare a size of at most `limit` (or exactly
    /// `exactly`): memory is never allocated past what the caller allows.
    package static func decompress(_ compressed: [UInt8], limit: Int, exactly: Int? = nil, prefix: [UInt8] = []) throws -> [UInt8] {
        try compressed.withUnsafeBytes { src in
            let declared = ZSTD_getFrameContentSize(src.baseAddress, src.count)
            guard declared != ZSTD_CONTENTSIZE_ERROR, declared != ZSTD_CONTENTSIZE_UNKNOWN, declared <= UInt64(limit),
                exactly.map({ UInt64($0) == declared }) ?? true
            else {
                throw Failure(description: "the frame does not declare an acceptable size")
            }
            var raw = [UInt8](repeating: 0, count: Int(declared))
            guard let dctx = ZSTD_createDCtx() else { throw Failure(description: "zstd is out of memory") }
            defer { ZSTD_freeDCtx(dctx) }
            let n = raw.withUnsafeMutableBytes { dst in
                prefix.withUnsafeBytes { prefix in
                    if prefix.count > 0 { ZSTD_DCtx_refPrefix(dctx, prefix.baseAddress, prefix.count) }
                    return ZSTD_decompressDCtx(dctx, dst.baseAddress, dst.count, src.baseAddress, src.count)
                }
            }
            guard ZSTD_isError(n) == 0, n == Int(declared) else {
                throw Failure(description: ZSTD_isError(n) != 0 ? String(cString: ZSTD_getErrorName(n)) : "short frame")
            }
            return raw
        }
    }
}
