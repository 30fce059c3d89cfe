import Foundation
import MapDelta
import MapModel
import MapPlatform

/// The chooser's entry: a file's own smallest payload, then one that also reads other
/// files of the group (a cross-file delta) where that is smaller.
extension PayloadChooser {
    /// Files a cross-file delta may read before the base: the payload's header naming them
    /// (``CrossReferences/encoded``) and their paths, in the same order.
    package struct Cross {
        /// The encoded references (the base last).
        package var header: [UInt8]
        /// The referenced files' paths, the base last.
        package var paths: [String]

        /// The referenced files' bytes, which a client joins for every cross-file delta
        /// but the segmented one.
        var bytes: Int64 { paths.reduce(Int64(0)) { $0 + (FileStatus.of($1)?.size ?? 0) } }

        /// References `header` naming `paths`.
        package init(header: [UInt8], paths: [String]) {
            self.header = header
            self.paths = paths
        }
    }

    /// Files up to this size get a cross-file delta as one zstd frame over the references
    /// joined; larger ones a segmented one whose windows lie in the references (mapped).
    static let wholeFrameCrossLimit: Int64 = 16 << 20

    /// The smallest payload for `newPath` (`newSize` bytes), optionally as a delta against
    /// `basePath`, or against `cross` (other files of the group, then the base) when that
    /// is smaller still.
    ///
    /// A file whose see-through payload won gets no cross-file trial: that trial diffs the
    /// compressed bytes, and the other files' compressed bytes share nothing with them that
    /// the base lacks (each stream's bytes depend on all that came before in it). On the
    /// gzip sample world's v1→v3 and v2→v3 patches it ran on 216 of 254 such files, won on
    /// none, and took 1.2 s of the 4.2 s their trials took. (A rule, not an estimate: the
    /// publish log does not repeat it for every file.)
    package func choose(newPath: String, newSize: Int64, basePath: String?, cross: Cross? = nil) throws -> Choice {
        var choice = try chooseSingle(newPath: newPath, newSize: newSize, basePath: basePath)
        guard let cross, basePath != nil, !choice.byteLevelRuledOut, choice.encoding != .stored || newSize > 0, choice.length > 64,
            !(skipByEstimate && choice.encoding.seeThrough != nil)
        else { return choice }
        if newSize > Self.wholeFrameCrossLimit || newSize > segmentThreshold {
            return try chooseLargeCross(newPath: newPath, newSize: newSize, cross: cross, single: choice)
        }
        let joined = workDirectory + "/cross.prefix"
        defer { FileSystem.empty(joined) }
        try join(cross.paths, into: joined)
        let prefix = try MappedFile.source(joined, displayPath: joined)
        guard !prefix.bytes.isEmpty, ZstdDelta.windowLog(forContentSize: Int64(prefix.bytes.count) + newSize) != nil else {
            return choice
        }
        // The other files are tried in the codec whose delta of the file alone won, where
        // one of zstd and LZMA2 did: on the sample world's 85 cross-file trials the other
        // codec's never won (a header and a longer prefix add about the same to both).
        let lzmaApplies = lzma && LzmaEncoder.applies(newSize: newSize, prefix: prefix.bytes.count)
        let lzmaWon = choice.encoding == .lzmaDelta || choice.encoding == .lzma
        let zstdWon = choice.encoding == .delta
        if !(skipByEstimate && lzmaWon && lzmaApplies) {
            let frame = workDirectory + "/cross.frame"
            let input = try SystemFile.openForReading(newPath)
            let frameLength = try compressor.encode(
                input, range: 0..<newSize, prefix: prefix.bytes, level: level,
                windowCover: Int64(prefix.bytes.count) + newSize,
                into: try SystemFile.createOrTruncate(frame)
            ).written
            let length = Int64(cross.header.count) + frameLength
            choice.tried[.crossDelta] = length
            if length < choice.length {
                try keepCross(cross, frame: frame, length: length, as: .crossDelta, in: &choice)
            }
        }
        if lzmaApplies, !(skipByEstimate && zstdWon) {
            let stream = workDirectory + "/cross-lzma.frame"
            let length =
                Int64(cross.header.count)
                + (try LzmaEncoder.encode(
                    path: newPath, size: newSize, prefix: prefix.bytes, preset: LzmaEncoder.preset(forLevel: level),
                    into: try SystemFile.createOrTruncate(stream)))
            choice.tried[.lzmaCrossDelta] = length
            if length < choice.length {
                try keepCross(cross, frame: stream, length: length, as: .lzmaCrossDelta, in: &choice)
            }
        }
        return choice
    }

    /// A large file's cross-file trials beside `single`, its own smallest payload: one frame
    /// over its references joined (``wholeCrossTrial(newPath:newSize:cross:in:)``) and a
    /// segmented cross-file delta whose windows lie in the references, mapped.
    private func chooseLargeCross(newPath: String, newSize: Int64, cross: Cross, single: Choice) throws -> Choice {
        var choice = single
        // A whole-file encode of a large file (20-30 s, ~1 GB): skipped where the anchors
        // say the other files hold next to nothing the base lacks.
        if skipByEstimate, let basePath = cross.paths.last,
            let estimate = CrossFileEstimate.of(newPath: newPath, basePath: basePath, otherPaths: cross.paths.dropLast())
        {
            choice.note = [choice.note, estimate.note].compactMap { $0 }.joined(separator: "; ")
            if estimate.rulesOutCrossTrial { return choice }
        }
        // One frame reaches every byte the segments' windows hold, and finds what the
        // file repeats from a reference far from its own place: with estimates, the
        // segments are not made beside it (a rule, not a measurement).
        if try wholeCrossTrial(newPath: newPath, newSize: newSize, cross: cross, in: &choice), skipByEstimate {
            return choice
        }
        guard let segments else { return choice }
        let frame = workDirectory + "/cross-segmented.frame"
        Self.largeEncodes.wait()
        defer { Self.largeEncodes.signal() }
        let length = Int64(cross.header.count) + (try segments.encode(newPath: newPath, oldPaths: cross.paths, into: frame))
        choice.tried[.segmentedCrossDelta] = length
        if length < choice.length {
            try keepCross(cross, frame: frame, length: length, as: .segmentedCrossDelta, in: &choice)
        }
        return choice
    }

    /// One zstd frame of a large file against its references joined
    /// (``PatchEncoding/wholeCrossDelta``), at the deep search where the level has one, its
    /// window over the references and the file; kept where smaller than `choice`. Returns
    /// whether it was made: not beyond ``CrossReferences/maxWholeFileBytes`` or with references over
    /// ``CrossReferences/maxWholePrefixBytes``, nor where ``PatchOptions/wholeCrossFrame``
    /// is off. The segmented cross-file delta sees, for each segment, only windows of the
    /// references near its place, each in one of them; one frame reads every reference at
    /// once, so a file that interleaves records of two references (a gazetteer cut holding
    /// a smaller cut's records between its own) matches both.
    func wholeCrossTrial(newPath: String, newSize: Int64, cross: Cross, in choice: inout Choice) throws -> Bool {
        let total = cross.bytes
        guard wholeCrossFrame, newSize <= CrossReferences.maxWholeFileBytes, total > 0, total <= CrossReferences.maxWholePrefixBytes,
            ZstdDelta.windowLog(forContentSize: total + newSize) != nil
        else { return false }
        let joined = workDirectory + "/cross.prefix"
        defer { FileSystem.empty(joined) }
        try join(cross.paths, into: joined)
        let prefix = try MappedFile.source(joined, displayPath: joined)
        guard Int64(prefix.bytes.count) == total else { throw PatchBuildError.fileChanged(path: cross.paths.last ?? joined) }
        let frame = workDirectory + "/cross-whole.frame"
        Self.largeEncodes.wait()
        defer { Self.largeEncodes.signal() }
        // Its own context, freed once done (as for a large file's own delta).
        let deep = ZstdCompressor.deepSearchApplies(level: level, newSize: newSize, prefixSize: prefix.bytes.count)
        let length =
            Int64(cross.header.count)
            + (try ZstdCompressor().encode(
                try SystemFile.openForReading(newPath), range: 0..<newSize, prefix: prefix.bytes, level: level,
                search: deep ? .deep : .cli, windowCover: total + newSize, into: try SystemFile.createOrTruncate(frame)
            ).written)
        choice.tried[.wholeCrossDelta] = length
        if length < choice.length {
            try keepCross(cross, frame: frame, length: length, as: .wholeCrossDelta, in: &choice)
        }
        return true
    }

    /// Writes the files at `paths` one after another into `joined`.
    private func join(_ paths: [String], into joined: String) throws {
        let out = try SystemFile.createOrTruncate(joined)
        for path in paths { try SystemFile.openForReading(path).forEachChunk { try out.writeAll($0) } }
    }

    /// Makes the references of `cross` followed by `frame` the chosen payload.
    func keepCross(_ cross: Cross, frame: String, length: Int64, as encoding: PatchEncoding, in choice: inout Choice) throws {
        let payload = workDirectory + "/cross.payload"
        let file = try SystemFile.createOrTruncate(payload)
        try cross.header.withUnsafeBytes { try file.writeAll($0) }
        try SystemFile.openForReading(frame).forEachChunk { try file.writeAll($0) }
        (choice.encoding, choice.payloadPath, choice.length, choice.note) = (encoding, payload, length, nil)
        choice.crossHeader = cross.header.count
        // The segmented form maps each reference; the others join them in a scratch file.
        if encoding != .segmentedCrossDelta { choice.scratch[encoding] = cross.bytes }
    }
}
