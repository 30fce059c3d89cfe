import CZstdParameters
import Crypto
import MapDelta
import MapModel
import MapPlatform

#if PackagedZstd
    import libzstd
#else
    import CZstd
#endif

/// One reusable zstd compression context: encodes a file as one frame, plain or as a
/// delta against a prefix, streaming the file in chunks through `ZSTD_compressStream2`.
package final class ZstdCompressor {
    private let cctx: OpaquePointer

    /// A fresh context; throws when zstd cannot allocate one.
    package init() throws {
        guard let cctx = ZSTD_createCCtx() else {
            throw PatchBuildError.codec(path: "-", message: "cannot create a compression context")
        }
        self.cctx = cctx
    }

    deinit { ZSTD_freeCCtx(cctx) }

    /// How a delta frame is searched for, beyond the level. Every variant writes frames the
    /// same decoder reads (the window stays the one covering the new file).
    package enum DeltaSearch: String, CaseIterable, Sendable {
        /// The zstd CLI's `--patch-from` parameters on the calling thread (`ZSTD_c_nbWorkers` 0).
        case cli
        /// The same through zstd's multithreaded API with one worker, the CLI's default
        /// (`--patch-from` without `--single-thread`): the frame is cut into jobs and the
        /// old file indexed differently. 14% smaller on timezone polygons (58 MB), 8–17%
        /// larger at levels 1–18 on other data.
        case cliWorker
        /// For the optimal parser (levels 16+ with more than ~256 KB): the CLI worker with a
        /// binary-tree chain table that spans the whole window (`chainLog` = windowLog + 1,
        /// at most ``maxDeepChainLog``) and level 22's hash table and search (`hashLog` up
        /// to 25, `searchLog` ≥ 9, `targetLength` ≥ 999), as the CLI's "[Optimal parser
        /// notes]" advise. At level 19
        /// zstd loads only the last 2^(max(hashLog+3, chainLog+1)) bytes (32 MiB) of the old
        /// file into its tables; the deeper chain indexes all of it. Timezone polygons
        /// (58 MB): 636,297 B vs 737,394 (CLI -19) and 636,301 (`--ultra -22`); 4,083,788 B
        /// vs 4,600,800 and 4,083,792 on a larger edit. Encoder ~1.4 GB at windowLog 26.
        case deep
    }

    /// The largest `chainLog` ``DeltaSearch/deep`` uses: a 1 GiB chain table (4 B per
    /// entry), which keeps the encoder below ~2 GB for files up to 2 GiB.
    package static let maxDeepChainLog = 28

    /// Compresses the file at `path` into `output` as one zstd frame and returns the bytes
    /// written. With a non-empty `prefix` (the old file, usually memory-mapped) the frame
    /// is a delta made with the zstd CLI's `--patch-from` parameters: window covering the
    /// new file, long-distance matching when the level's chain table reaches less far,
    /// searched as `search` says.
    /// Checksums are off (the patch pins every file by SHA-256); the content size is in
    /// the frame header.
    ///
    /// `longDistanceMatching` nil applies the CLI's rule; true or false forces it. Plain
    /// frames (no prefix) are always made on the calling thread. Throws
    /// ``PatchBuildError/codec(path:message:)`` when zstd refuses a parameter (e.g. a
    /// library built without threads for ``DeltaSearch/cliWorker``).
    package func encode(
        path: String, prefix: UnsafeRawBufferPointer?, level: Int,
        longDistanceMatching: Bool? = nil, search: DeltaSearch = .cli,
        overrides: [(ZSTD_cParameter, Int)] = [],
        into output: SystemFile
    ) throws -> Int64 {
        let input = try SystemFile.openForReading(path)
        let size = try input.size()
        let written = try encode(
            input, range: 0..<size, prefix: prefix, level: level,
            longDistanceMatching: longDistanceMatching, search: search, overrides: overrides,
            into: output
        ).written
        guard try input.size() == size else { throw PatchBuildError.fileChanged(path: path) }
        return written
    }

    /// ``encode(path:prefix:level:longDistanceMatching:search:overrides:into:)`` of the
    /// bytes `range` of `input` (one segment of a large file); returns the frame's length
    /// and the SHA-256 of the bytes encoded. With `windowCover`, the window spans that many
    /// bytes (a segment reaching back over its whole old window) instead of the input's.
    package func encode(
        _ input: SystemFile, range: Range<Int64>, prefix: UnsafeRawBufferPointer?, level: Int,
        longDistanceMatching: Bool? = nil, search: DeltaSearch = .cli,
        overrides: [(ZSTD_cParameter, Int)] = [], windowCover: Int64? = nil,
        into output: SystemFile
    ) throws -> (written: Int64, sha256: SHA256Hash) {
        let path = input.path
        let size = range.upperBound - range.lowerBound
        ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters)
        func check(_ code: Int) throws {
            if ZstdDelta.isError(code) { throw PatchBuildError.codec(path: path, message: ZstdDelta.errorName(code)) }
        }
        func set(_ parameter: ZSTD_cParameter, _ value: Int) throws {
            try check(ZSTD_CCtx_setParameter(cctx, parameter, Int32(value)))
        }
        try set(ZSTD_c_compressionLevel, level)
        try set(ZSTD_c_checksumFlag, 0)
        try set(ZSTD_c_contentSizeFlag, 1)
        if let prefix, prefix.count > 0 {
            if let reason = ZstdDelta.deltaLimitReason(oldSize: Int64(prefix.count), newSize: windowCover ?? size) {
                throw PatchBuildError.deltaUnavailable(path: path, reason: reason)
            }
            let windowLog = ZstdDelta.windowLog(forContentSize: windowCover ?? size)!
            try set(ZSTD_c_windowLog, windowLog)
            if longDistanceMatching
                ?? Self.needsLongDistanceMatching(
                    windowLog: windowLog, level: level,
                    newSize: size, prefixSize: prefix.count)
            {
                try set(ZSTD_c_enableLongDistanceMatching, 1)
            }
            if search != .cli {
                try set(ZSTD_c_nbWorkers, 1)
            }
            if search == .deep {
                let params = maploader_zstd_get_parameters(Int32(level), UInt64(size), prefix.count)
                if params.strategy >= Int32(ZSTD_btopt.rawValue) {
                    try set(ZSTD_c_chainLog, max(Int(params.chainLog), min(windowLog + 1, Self.maxDeepChainLog)))
                    try set(ZSTD_c_hashLog, max(Int(params.hashLog), min(windowLog - 1, 25)))
                    try set(ZSTD_c_searchLog, max(Int(params.searchLog), 9))
                    try set(ZSTD_c_targetLength, max(Int(params.targetLength), 999))
                }
            }
        }
        for (p, v) in overrides { try set(p, v) }
        if let prefix, prefix.count > 0 {
            try check(ZSTD_CCtx_refPrefix(cctx, prefix.baseAddress, prefix.count))
        }
        try check(ZSTD_CCtx_setPledgedSrcSize(cctx, UInt64(size)))
        return try stream(input, range: range, path: path, into: output)
    }

    /// Whether ``DeltaSearch/deep`` differs from ``DeltaSearch/cliWorker`` at `level` for
    /// a `newSize`-byte file against a `prefixSize`-byte one (optimal-parser levels only).
    package static func deepSearchApplies(level: Int, newSize: Int64, prefixSize: Int) -> Bool {
        maploader_zstd_get_parameters(Int32(level), UInt64(newSize), prefixSize).strategy >= Int32(ZSTD_btopt.rawValue)
    }

    /// The CLI's rule: long-distance matching when the window is larger than the cycle
    /// the level's chain table covers (`chainLog`, one less for binary-tree strategies).
    package static func needsLongDistanceMatching(
        windowLog: Int, level: Int, newSize: Int64,
        prefixSize: Int
    ) -> Bool {
        let params = maploader_zstd_get_parameters(Int32(level), UInt64(newSize), prefixSize)
        let cycleLog = Int(params.chainLog) - (params.strategy >= Int32(ZSTD_btlazy2.rawValue) ? 1 : 0)
        return windowLog > cycleLog
    }

    /// Feeds `input` through the context in chunks and writes the frame to `output`.
    private func stream(
        _ input: SystemFile, range: Range<Int64>, path: String,
        into output: SystemFile
    ) throws -> (written: Int64, sha256: SHA256Hash) {
        let expectedSize = range.upperBound - range.lowerBound
        var hasher = SHA256()
        let inCapacity = 1 << 20
        let outCapacity = ZSTD_CStreamOutSize()
        let inBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: inCapacity, alignment: 16)
        defer { inBuffer.deallocate() }
        let outBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: outCapacity, alignment: 16)
        defer { outBuffer.deallocate() }
        var read: Int64 = 0
        var written: Int64 = 0
        while true {
            let want = Int(min(Int64(inCapacity), expectedSize - read))
            let n =
                want == 0
                ? 0
                : try input.readChunk(
                    into: UnsafeMutableRawBufferPointer(rebasing: inBuffer[0..<want]),
                    at: range.lowerBound + read)
            if want > 0, n == 0 { throw PatchBuildError.fileChanged(path: path) }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: inBuffer[0..<n]))
            read += Int64(n)
            let directive = n == 0 ? ZSTD_e_end : ZSTD_e_continue
            var inb = ZSTD_inBuffer(src: inBuffer.baseAddress, size: n, pos: 0)
            var remaining: Int
            repeat {
                var outb = ZSTD_outBuffer(dst: outBuffer.baseAddress, size: outCapacity, pos: 0)
                remaining = ZSTD_compressStream2(cctx, &outb, &inb, directive)
                if ZstdDelta.isError(remaining) {
                    throw PatchBuildError.codec(path: path, message: ZstdDelta.errorName(remaining))
                }
                try output.writeAll(UnsafeRawBufferPointer(rebasing: outBuffer[0..<outb.pos]))
                written += Int64(outb.pos)
            } while directive == ZSTD_e_end ? remaining != 0 : inb.pos < inb.size
            if n == 0 { break }
        }
        guard read == expectedSize else { throw PatchBuildError.fileChanged(path: path) }
        return (written, SHA256Hash(hasher.finalize()))
    }
}
