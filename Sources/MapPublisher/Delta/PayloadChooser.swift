import Foundation
import MapDelta
import MapModel
import MapPlatform

/// Encodes one new file the ways that apply (delta against a base, plain zstd, stored)
/// and keeps the smallest; ties go to the simpler encoding (stored, then zstd).
///
/// Plain zstd is not tried when the delta is already below 1/64 of the file: without the
/// old file zstd cannot get near such a ratio on data the old file explains, and on large
/// files the extra pass costs as much as the delta itself (63 of 149 s on a 61 MB file).
package struct PayloadChooser {
    /// The winning payload.
    package struct Choice {
        /// Its encoding.
        package var encoding: PatchEncoding
        /// The file holding the payload bytes (the new file itself when stored).
        package var payloadPath: String
        /// Its length.
        package var length: Int64
        /// Every encoding tried and its size.
        package var tried: [PatchEncoding: Int64]
        /// Why a delta was not used although a base was offered, if so.
        package var note: String?
    }

    /// A delta below this fraction of the new file skips the plain-zstd trial.
    static let plainZstdSkipRatio: Int64 = 64

    /// The context every trial encodes with.
    let compressor: ZstdCompressor
    /// The zstd level.
    let level: Int
    /// Where trial payloads are written (`zstd.payload`, `delta.payload`, `delta-ldm.payload`).
    let workDirectory: String

    /// A chooser encoding at `level` into files in `workDirectory`.
    package init(compressor: ZstdCompressor, level: Int, workDirectory: String) {
        self.compressor = compressor
        self.level = level
        self.workDirectory = workDirectory
    }

    /// The smallest payload for `newPath` (`newSize` bytes), optionally as a delta against `basePath`.
    package func choose(newPath: String, newSize: Int64, basePath: String?) throws -> Choice {
        var choice = Choice(encoding: .stored, payloadPath: newPath, length: newSize, tried: [.stored: newSize])
        guard newSize > 0 else { return choice }
        var delta: (path: String, length: Int64)?
        if let basePath {
            let base = try MappedFile.source(basePath, displayPath: basePath)
            if let reason = ZstdDelta.deltaLimitReason(oldSize: Int64(base.bytes.count), newSize: newSize) {
                choice.note = "no delta: \(reason)"
            } else {
                delta = try encodeDelta(newPath, newSize: newSize, base: base.bytes)
                choice.tried[.delta] = delta!.length
            }
        }
        if delta.map({ $0.length * Self.plainZstdSkipRatio > newSize }) ?? true {
            let zstdPath = workDirectory + "/zstd.payload"
            let length = try encode(newPath, prefix: nil, into: zstdPath)
            choice.tried[.zstd] = length
            if length < choice.length {
                (choice.encoding, choice.payloadPath, choice.length) = (.zstd, zstdPath, length)
            }
        }
        if let delta {
            if delta.length < choice.length {
                (choice.encoding, choice.payloadPath, choice.length) = (.delta, delta.path, delta.length)
            } else {
                choice.note = "delta (\(delta.length) B) not smaller than \(choice.encoding) (\(choice.length) B)"
            }
        }
        if let basePath, GzipMember.looksLikeGzip(newPath), GzipMember.looksLikeGzip(basePath) {
            switch try seeThrough(newPath, basePath: basePath) {
            case .success(let gzip):
                choice.tried[.gzipDelta] = gzip.length
                if gzip.length < choice.length {
                    (choice.encoding, choice.payloadPath, choice.length) = (.gzipDelta, gzip.path, gzip.length)
                    choice.note = nil
                }
            case .failure(let reason):
                choice.note = "no see-through delta: \(reason.description)"
            }
        }
        return choice
    }

    /// Why a gzip file gets no see-through delta.
    struct NoSeeThrough: Error, CustomStringConvertible {
        let description: String
    }

    /// A see-through payload for a gzip file changed from the gzip file `basePath`: both
    /// inflated into the work folder, the new stream's zlib parameters found (the payload
    /// must rebuild its bytes exactly), and the inflated new content diffed against the
    /// inflated old one. A stream zlib does not reproduce (another encoder) gets none.
    private func seeThrough(_ newPath: String, basePath: String) throws -> Result<(path: String, length: Int64), NoSeeThrough> {
        let oldInflated = workDirectory + "/old.inflated", newInflated = workDirectory + "/new.inflated"
        defer {
            FileSystem.remove(oldInflated)
            FileSystem.remove(newInflated)
        }
        let layout: GzipMember.Layout
        do {
            _ = try GzipMember.inflate(basePath, into: oldInflated)
            layout = try GzipMember.inflate(newPath, into: newInflated)
        } catch {
            return .failure(NoSeeThrough(description: "not a single well-formed gzip member (\(error))"))
        }
        guard let parameters = DeflateRecipe.find(inflated: try SystemFile.openForReading(newInflated),
                                                  original: try SystemFile.openForReading(newPath),
                                                  offset: Int64(layout.header.count), length: layout.deflateLength) else {
            return .failure(NoSeeThrough(description: "zlib does not reproduce its deflate stream (another encoder made it); byte-level delta kept"))
        }
        let base = try MappedFile.source(oldInflated, displayPath: basePath)
        let frame = workDirectory + "/gzip.frame"
        let frameLength = try encode(newInflated, prefix: base.bytes, into: frame)
        let recipe = DeflateRecipe(header: layout.header, parameters: parameters, inflatedSize: layout.inflatedSize).encoded
        let payload = workDirectory + "/gzip.payload"
        let out = try SystemFile.createOrTruncate(payload)
        try recipe.withUnsafeBytes { try out.writeAll($0) }
        try SystemFile.openForReading(frame).forEachChunk { try out.writeAll($0) }
        return .success((payload, Int64(recipe.count) + frameLength))
    }

    /// The smallest of several deltas (all read by the same decoder, each deterministic):
    /// the CLI's parameters on this thread (``ZstdCompressor/DeltaSearch/cli``), through
    /// one worker thread as the CLI runs them (`cliWorker`), and at optimal-parser levels
    /// with a chain table spanning the whole window (`deep`). Where the CLI's rule leaves
    /// long-distance matching off (files up to the level's chain reach, a few MB, so cheap
    /// to encode again) the CLI delta with it on is tried too. Which one wins depends on
    /// the data: on timezone polygons (58 MB) `deep` is 14% below the CLI's -19 and level
    /// 22; at levels 1–18 the worker variant was 8–17% larger on other data. Costs one
    /// encode per variant (~70 s instead of ~20 s for a 58 MB file at level 19).
    private func encodeDelta(_ path: String, newSize: Int64, base: UnsafeRawBufferPointer) throws -> (path: String, length: Int64) {
        var best: (path: String, length: Int64)?
        func trial(_ name: String, search: ZstdCompressor.DeltaSearch, longDistanceMatching: Bool? = nil,
                   optional: Bool) throws {
            let file = workDirectory + "/\(name).payload"
            let length: Int64
            do {
                length = try encode(path, prefix: base, longDistanceMatching: longDistanceMatching, search: search,
                                    into: file)
            } catch PatchBuildError.codec(_, _) where optional {
                return  // e.g. a zstd without threads refuses ZSTD_c_nbWorkers: keep the other variants
            }
            if best.map({ length < $0.length }) ?? true { best = (file, length) }
        }
        try trial("delta", search: .cli, optional: false)
        let windowLog = ZstdDelta.windowLog(forContentSize: newSize)!
        if !ZstdCompressor.needsLongDistanceMatching(windowLog: windowLog, level: level, newSize: newSize,
                                                     prefixSize: base.count) {
            try trial("delta-ldm", search: .cli, longDistanceMatching: true, optional: false)
        }
        try trial("delta-worker", search: .cliWorker, optional: true)
        if ZstdCompressor.deepSearchApplies(level: level, newSize: newSize, prefixSize: base.count) {
            try trial("delta-deep", search: .deep, optional: true)
        }
        return best!
    }

    private func encode(_ path: String, prefix: UnsafeRawBufferPointer?, longDistanceMatching: Bool? = nil,
                        search: ZstdCompressor.DeltaSearch = .cli, into output: String) throws -> Int64 {
        let out = try SystemFile.createOrTruncate(output)
        return try compressor.encode(path: path, prefix: prefix, level: level,
                                     longDistanceMatching: longDistanceMatching, search: search, into: out)
    }
}
