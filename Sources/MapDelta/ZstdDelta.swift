import MapModel
import MapPlatform

#if PackagedZstd
    import libzstd
#else
    import CZstd
#endif

/// Byte deltas of one file against its old version: a zstd frame compressed with the old
/// file as raw-content prefix (`ZSTD_CCtx_refPrefix`, applied with `ZSTD_DCtx_refPrefix`),
/// the same frames `zstd --patch-from=old new` writes and reads.
///
/// Parameters follow the zstd CLI's `FIO_adjustParamsForPatchFromMode`: the window covers
/// the new file (highest bit of its size + 1, at least 2^10), long-distance matching is on
/// when that window exceeds what the level's chain table reaches, and the decoder raises
/// `ZSTD_d_windowLogMax` to the same window. zstd's window stops at 2^31 on 64-bit, so
/// files of 2 GiB and more are not delta-encoded (the publisher falls back to plain zstd or
/// stored bytes per file and records why). This client side only decodes; the publisher
/// adds the encoder.
package enum ZstdDelta {
    /// zstd's largest window log on 64-bit (`ZSTD_WINDOWLOG_MAX_64`): a 2 GiB window.
    package static let maxWindowLog = 31
    /// zstd's smallest window log (`ZSTD_WINDOWLOG_MIN`).
    package static let minWindowLog = 10
    /// Largest old or new file a delta can cover (2 GiB − 1 byte).
    package static let maxFileSize: Int64 = (1 << 31) - 1

    /// The window log that covers `size` bytes the way the zstd CLI sizes it for
    /// `--patch-from` (highest set bit + 1, at least ``minWindowLog``), or nil when that
    /// exceeds ``maxWindowLog``.
    package static func windowLog(forContentSize size: Int64) -> Int? {
        let log = size <= 0 ? minWindowLog : max(minWindowLog, 64 - size.leadingZeroBitCount)
        return log <= maxWindowLog ? log : nil
    }

    /// Why a delta of a `newSize`-byte file against an `oldSize`-byte file is impossible,
    /// or nil when it is possible.
    package static func deltaLimitReason(oldSize: Int64, newSize: Int64) -> String? {
        if newSize > maxFileSize {
            return "new file is \(newSize) bytes, beyond zstd's 2 GiB window (windowLog \(maxWindowLog))"
        }
        if oldSize > maxFileSize {
            return "old file is \(oldSize) bytes, beyond zstd's 2 GiB prefix limit (windowLog \(maxWindowLog))"
        }
        if oldSize == 0 { return "old file is empty" }
        return nil
    }

    /// The text of a zstd error code.
    package static func errorName(_ code: Int) -> String {
        String(cString: ZSTD_getErrorName(code))
    }

    /// Whether a zstd return value is an error code.
    package static func isError(_ code: Int) -> Bool {
        ZSTD_isError(code) != 0
    }
}
