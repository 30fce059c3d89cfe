import Foundation
import MapDelta
import MapModel
import MapPlatform

/// Writes a ``SuffixDelta`` (bsdiff's matching, Colin Percival's algorithm): a suffix array
/// of the old file (``SuffixIndex``) finds, for each position of the new file, the longest
/// old match; runs that match approximately become "add" steps whose byte differences are
/// mostly zero, the rest "copy" steps. Memory: the suffix index (4 bytes per old byte),
/// both files mapped, and the three streams (at most the new file's size).
///
/// The extra bytes are also tried filtered (each byte's difference from the new byte a
/// stride before, ``PatchEncoding/filteredSuffixDelta``): new coordinates, ids and
/// offsets in fixed-width fields compress a third smaller that way.
package enum SuffixEncoder {
    /// Files beyond this (old or new) are not tried: the suffix index alone is 4× the old file.
    package static let maxFileSize: Int64 = 64 << 20
    /// Files beyond this are not tried beside a segmented delta (``PayloadChooser``): the
    /// suffix index of such an old file is 1 GiB, within the memory a large encode is given
    /// (``PayloadChooser/largeEncodeMemory``; 1.3 GB peak on a 187 MB pair).
    package static let maxWholeFileSize: Int64 = 256 << 20

    /// The strides tried for the extra bytes (0: unfiltered): byte, 16-, 32- and 64-bit fields.
    package static let strides = [0, 1, 2, 4, 8]
    /// Extra streams above this are ranked at a fast level before the chosen one is
    /// compressed at the publish level (a whole-level trial per stride costs seconds).
    static let rankAtFastLevelAbove = 1 << 20

    /// Encodes `newPath` against `oldPath` into `output` with zstd at `level`; returns the
    /// payload's length and encoding (``PatchEncoding/suffixDelta`` or
    /// ``PatchEncoding/filteredSuffixDelta``), or nil when a file is empty or too large.
    /// `strides` are the filters tried for the extra bytes (0: none). With
    /// `strideByteAlways` the stride byte is written even when it is 0 (a see-through
    /// expansion, ``PatchEncoding/suffixDeflateDelta``); the encoding returned is then
    /// ``PatchEncoding/filteredSuffixDelta`` whatever the stride. With `sparse` the add
    /// bytes are also tried as runs and replaced bytes (``PatchEncoding/sparseSuffixDelta``),
    /// kept where smaller. Once `stopped` says so (a trial another one ruled out), it throws
    /// a `CancellationError` within about a mebibyte of scan or one frame.
    package static func encode(
        newPath: String, oldPath: String, level: Int, strides: [Int] = strides, strideByteAlways: Bool = false,
        sparse: Bool = false, stopped: () -> Bool = { false }, into output: String
    ) throws -> (length: Int64, encoding: PatchEncoding)? {
        guard let oldSize = FileStatus.of(oldPath)?.size, let newSize = FileStatus.of(newPath)?.size,
            (1...maxWholeFileSize).contains(oldSize), (1...maxWholeFileSize).contains(newSize)
        else { return nil }
        let old = try MappedFile.source(oldPath, displayPath: oldPath)
        let new = try MappedFile.source(newPath, displayPath: newPath)
        guard !old.bytes.isEmpty, !new.bytes.isEmpty, old.bytes.count <= Int(maxWholeFileSize),
            new.bytes.count <= Int(maxWholeFileSize)
        else { return nil }
        let oldBytes = old.bytes.bindMemory(to: UInt8.self)
        let newBytes = new.bytes.bindMemory(to: UInt8.self)
        if stopped() { throw CancellationError() }
        var (controls, differences, extraRanges) = try SuffixIndex.with(oldBytes, path: oldPath) {
            try steps(new: newBytes, index: $0, stopped: stopped)
        }
        // At most level 19: its window (8 MiB) stays within what every client's decoder accepts.
        let level = min(level, 19)
        let extraCount = extraRanges.reduce(0) { $0 + $1.count }
        // Each stream is one frame without a checksum: the client checks the file it
        // rebuilds against its SHA-256.
        func frame(_ bytes: [UInt8], level: Int) throws -> [UInt8] {
            if stopped() { throw CancellationError() }
            return try ZstdFrame.compress(bytes, level: level, checksum: false)
        }
        var best: (stride: Int, frame: [UInt8])?
        let candidates = strides.filter { $0 == 0 || SuffixDelta.strides.contains($0) }
        for stride in candidates.isEmpty ? [0] : candidates {
            let trial = try frame(filtered(newBytes, extraRanges, stride: stride), level: extraCount > rankAtFastLevelAbove ? 3 : level)
            if best.map({ trial.count < $0.frame.count }) ?? true { best = (stride, trial) }
        }
        let stride = best!.stride
        let extraFrame =
            extraCount > rankAtFastLevelAbove ? try frame(filtered(newBytes, extraRanges, stride: stride), level: level) : best!.frame
        extraRanges = []
        var adds = [try frame(differences, level: level)]
        var strideByte = stride > 0 || strideByteAlways
        // The publisher holds at most this many replaced bytes: past 32 times the
        // differences frame (raw bytes that would have to compress 32-fold) or a quarter of
        // the add bytes, the trial stops and the differences frame is kept.
        let cap = min(32 * adds[0].count, differences.count / 4) + (64 << 10)
        if sparse,
            let (runs, bytes) = differences.withUnsafeBufferPointer({
                sparseRuns(differences: $0, controls: controls, new: newBytes, cap: cap)
            })
        {
            let replaced = [try frame(runs, level: level), try frame(bytes, level: level)]
            // The sparse form has a stride byte and a fourth frame length.
            if replaced[0].count + replaced[1].count + 8 + (strideByte ? 0 : 1) < adds[0].count {
                adds = replaced
                strideByte = true
            }
        }
        let frames = [try frame(controls, level: level)] + adds + [extraFrame]
        controls = []
        differences = []
        let out = try SystemFile.createOrTruncate(output)
        var header: [UInt8] = strideByte ? [UInt8(stride)] : []
        for frame in frames { withUnsafeBytes(of: UInt64(frame.count).littleEndian) { header += $0 } }
        try header.withUnsafeBytes { try out.writeAll($0) }
        for frame in frames { try frame.withUnsafeBytes { try out.writeAll($0) } }
        let encoding: PatchEncoding = adds.count == 2 ? .sparseSuffixDelta : strideByte ? .filteredSuffixDelta : .suffixDelta
        return (try out.size(), encoding)
    }

    /// The new file's bytes in `ranges`, each as its difference from the byte `stride`
    /// before it in the new file (0 before the start); as they are with `stride` 0.
    static func filtered(_ new: UnsafeBufferPointer<UInt8>, _ ranges: [Range<Int>], stride: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(ranges.reduce(0) { $0 + $1.count })
        for range in ranges {
            if stride == 0 {
                out += new[range]
                continue
            }
            for position in range { out.append(new[position] &- (position >= stride ? new[position - stride] : 0)) }
        }
        return out
    }

    /// How far a step extends the last match forward (bytes after `last` that mostly
    /// agree) and the next match backward (bytes before `match` that mostly agree), with an
    /// overlap of the two split where the bytes agree best: bsdiff's rule.
    private static func extents(
        old: UnsafeBufferPointer<UInt8>, new: UnsafeBufferPointer<UInt8>, last: (scan: Int, position: Int), match: (scan: Int, position: Int)
    ) -> (forward: Int, backward: Int) {
        let (lastScan, lastPosition) = last
        let (scan, position) = match
        var score = 0
        var bestForward = 0
        var forward = 0
        var i = 0
        while lastScan + i < scan, lastPosition + i < old.count {
            if old[lastPosition + i] == new[lastScan + i] { score += 1 }
            i += 1
            if score * 2 - i > bestForward * 2 - forward {
                bestForward = score
                forward = i
            }
        }
        var backward = 0
        if scan < new.count {
            score = 0
            var bestBackward = 0
            i = 1
            while scan >= lastScan + i, position >= i {
                if old[position - i] == new[scan - i] { score += 1 }
                if score * 2 - i > bestBackward * 2 - backward {
                    bestBackward = score
                    backward = i
                }
                i += 1
            }
        }
        if lastScan + forward > scan - backward {
            let overlap = (lastScan + forward) - (scan - backward)
            score = 0
            var bestSplit = 0
            var split = 0
            for j in 0..<overlap {
                if new[lastScan + forward - overlap + j] == old[lastPosition + forward - overlap + j] { score += 1 }
                if new[scan - backward + j] == old[position - backward + j] { score -= 1 }
                if score > bestSplit {
                    bestSplit = score
                    split = j + 1
                }
            }
            forward += split - overlap
            backward -= split
        }
        return (forward, backward)
    }

    /// bsdiff's scan: the control and difference streams, and where in the new file the
    /// extra bytes are; a `CancellationError` once `stopped` says so (asked each mebibyte).
    private static func steps(
        new: UnsafeBufferPointer<UInt8>, index: SuffixIndex, stopped: () -> Bool
    ) throws -> ([UInt8], [UInt8], [Range<Int>]) {
        let old = index.old
        let oldSize = old.count
        let newSize = new.count
        var controls: [UInt8] = []
        var differences: [UInt8] = []
        var extra: [Range<Int>] = []
        differences.reserveCapacity(newSize)
        func put(_ value: Int64) { withUnsafeBytes(of: value.littleEndian) { controls += $0 } }
        var scan = 0
        var length = 0
        var position = 0
        var lastScan = 0
        var lastPosition = 0
        var lastOffset = 0
        var nextAsk = 0
        while scan < newSize {
            var oldScore = 0
            scan += length
            var scoreScan = scan
            while scan < newSize {
                if scan >= nextAsk {
                    if stopped() { throw CancellationError() }
                    nextAsk = scan + (1 << 20)
                }
                let match = index.longestMatch(new, from: scan)
                (length, position) = (match.length, match.position)
                while scoreScan < scan + length {
                    if scoreScan + lastOffset < oldSize, old[scoreScan + lastOffset] == new[scoreScan] { oldScore += 1 }
                    scoreScan += 1
                }
                if (length == oldScore && length != 0) || length > oldScore + 8 { break }
                if scan + lastOffset < oldSize, old[scan + lastOffset] == new[scan] { oldScore -= 1 }
                scan += 1
            }
            guard length != oldScore || scan == newSize else { continue }
            let (forward, backward) = Self.extents(
                old: old, new: new, last: (lastScan, lastPosition), match: (scan, position))
            for j in 0..<forward { differences.append(new[lastScan + j] &- old[lastPosition + j]) }
            let copy = (scan - backward) - (lastScan + forward)
            if copy > 0 { extra.append((lastScan + forward)..<(lastScan + forward + copy)) }
            put(Int64(forward))
            put(Int64(copy))
            put(Int64((position - backward) - (lastPosition + forward)))
            lastScan = scan - backward
            lastPosition = position - backward
            lastOffset = position - scan
        }
        // The decoder reads each stream as one zstd frame: an empty one is still a frame.
        return (controls, differences, extra)
    }
}
