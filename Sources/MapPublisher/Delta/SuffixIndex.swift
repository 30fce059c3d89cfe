import CDivSufSort

/// The sorted suffixes of an old file (libdivsufsort) and the longest old match of new
/// bytes among them, found by bsdiff's binary search in the suffixes' own order, in fewer
/// steps:
/// - the search starts in the bucket of suffixes that begin with the new bytes' first
///   two, found in a table of where each bucket starts (257 slots per first byte);
/// - every suffix between two others shares at least the shorter of their common
///   prefixes with the new bytes, so each comparison starts there.
///
/// On a map image's 3 MB of pixels, bsdiff's search compared long runs from their start
/// at each of its 22 steps per position: the image's publish took 0.8–1.0 s, now 0.6 s.
/// The scan of 55 MB of timezone polygons took 12 s, now 10 s. (Galloping from the match
/// one byte before, found by the old suffixes' ranks, saved another 0.1 s on the image
/// but cost 1–2 s and 220 MB on the polygons: not kept.)
///
/// Memory: 4 bytes per old byte and 257 kB for the table, while `body` runs.
package struct SuffixIndex {
    /// The old file, as the suffixes index it.
    package let old: UnsafeBufferPointer<UInt8>
    private let suffixes: UnsafeBufferPointer<Int32>
    /// Where each bucket's suffixes start in `suffixes`: bucket `c * 257` holds the
    /// one-byte suffix `c` (when the file ends with `c`), `c * 257 + 1 + d` the suffixes
    /// that start with `c, d`; the last entry ends the last bucket.
    private let starts: UnsafeBufferPointer<Int32>

    private static let buckets = 256 * 257

    /// Sorts the suffixes of `old` (1 byte to 2 GiB − 1) and runs `body` with them.
    /// Throws `PatchBuildError` when libdivsufsort fails; `path` names the file there.
    package static func with<Result>(
        _ old: UnsafeBufferPointer<UInt8>, path: String, _ body: (SuffixIndex) throws -> Result
    ) throws -> Result {
        guard !old.isEmpty, old.count < Int(Int32.max) else {
            throw PatchBuildError.codec(path: path, message: "cannot sort the suffixes of \(old.count) bytes")
        }
        let suffixes = UnsafeMutableBufferPointer<Int32>.allocate(capacity: old.count)
        defer { suffixes.deallocate() }
        let status = divsufsort(old.baseAddress, suffixes.baseAddress, Int32(old.count))
        guard status == 0 else { throw PatchBuildError.codec(path: path, message: "libdivsufsort failed (\(status))") }
        let starts = UnsafeMutableBufferPointer<Int32>.allocate(capacity: buckets + 1)
        defer { starts.deallocate() }
        starts.initialize(repeating: 0)
        for position in 0..<(old.count - 1) { starts[bucket(old[position], old[position + 1]) + 1] += 1 }
        starts[Int(old[old.count - 1]) * 257 + 1] += 1
        for slot in 1...buckets { starts[slot] += starts[slot - 1] }
        return try body(SuffixIndex(old: old, suffixes: .init(suffixes), starts: .init(starts)))
    }

    private static func bucket(_ first: UInt8, _ second: UInt8) -> Int { Int(first) * 257 + 1 + Int(second) }

    /// A match of new bytes in the old file: how long, and where it starts in the old file.
    package struct Match: Equatable, Sendable {
        package var length: Int
        package var position: Int

        package init(length: Int, position: Int) { (self.length, self.position) = (length, position) }
    }

    /// The longest match of `new[from...]` (`from` inside `new`) among the old suffixes:
    /// of the two suffixes either side of where the new bytes sort (bsdiff's last two),
    /// the longer match; the later one on a tie.
    package func longestMatch(_ new: UnsafeBufferPointer<UInt8>, from: Int) -> Match {
        guard suffixes.count > 1 else {
            return Match(length: matchLength(Int(suffixes[0]), new, from, known: 0), position: Int(suffixes[0]))
        }
        // The first suffix that does not sort before the new bytes.
        let first: Int
        if from + 1 < new.count {
            let slot = Self.bucket(new[from], new[from + 1])
            var bounds = Bounds(low: Int(starts[slot]), high: Int(starts[slot + 1]))
            while bounds.low < bounds.high {
                let middle = bounds.low + (bounds.high - bounds.low) / 2
                bounds.narrow(at: middle, sortsBefore(middle, new, from, known: bounds.known))
            }
            first = bounds.low
        } else {
            // One new byte: the one-byte suffix equal to it, if any, comes first of its bucket.
            first = Int(starts[Int(new[from]) * 257])
        }
        // bsdiff's search ends between the last suffix before and this one, kept inside the array.
        let high = min(max(first, 1), suffixes.count - 1)
        let low = high - 1
        let a = matchLength(Int(suffixes[low]), new, from, known: 0)
        let b = matchLength(Int(suffixes[high]), new, from, known: 0)
        return a > b ? Match(length: a, position: Int(suffixes[low])) : Match(length: b, position: Int(suffixes[high]))
    }

    /// Where the first suffix not before the new bytes can be: `low..<high` of the sorted
    /// suffixes, and the bytes the new ones share with the suffix before `low` and with the
    /// one at `high` (2 at a bucket's edge: all of its suffixes share its two bytes).
    private struct Bounds {
        var low: Int
        var high: Int
        var lowLength = 2
        var highLength = 2

        /// Bytes every suffix inside shares with the new ones.
        var known: Int { min(lowLength, highLength) }

        /// After comparing the suffix at `rank`: whether it sorts before the new bytes, and
        /// the bytes they share.
        mutating func narrow(at rank: Int, _ comparison: (before: Bool, length: Int)) {
            if comparison.before {
                (low, lowLength) = (rank + 1, comparison.length)
            } else {
                (high, highLength) = (rank, comparison.length)
            }
        }
    }

    /// Whether the suffix at `rank` sorts before `new[from...]`, and the bytes they share,
    /// the first `known` of which are equal. It sorts before when it differs first by a
    /// smaller byte, or ends first. (bsdiff's memcmp over the shorter of the two counts an
    /// old suffix that ends first as not before: that order is not the suffixes' own, and
    /// a search by it can miss the longest match near the old file's end.)
    private func sortsBefore(_ rank: Int, _ new: UnsafeBufferPointer<UInt8>, _ from: Int, known: Int) -> (before: Bool, length: Int) {
        let start = Int(suffixes[rank])
        let length = matchLength(start, new, from, known: known)
        guard from + length < new.count else { return (false, length) }
        return (start + length == old.count || old[start + length] < new[from + length], length)
    }

    /// How many bytes of `old[start...]` and `new[from...]` are equal, given that the first
    /// `known` are; compared eight at a time.
    private func matchLength(_ start: Int, _ new: UnsafeBufferPointer<UInt8>, _ from: Int, known: Int) -> Int {
        let limit = min(old.count - start, new.count - from)
        var length = known
        let a = UnsafeRawPointer(old.baseAddress! + start)
        let b = UnsafeRawPointer(new.baseAddress! + from)
        while length + 8 <= limit {
            let difference =
                a.loadUnaligned(fromByteOffset: length, as: UInt64.self)
                ^ b.loadUnaligned(fromByteOffset: length, as: UInt64.self)
            if difference != 0 { return length + UInt64(littleEndian: difference).trailingZeroBitCount >> 3 }
            length += 8
        }
        while length < limit, a.load(fromByteOffset: length, as: UInt8.self) == b.load(fromByteOffset: length, as: UInt8.self) {
            length += 1
        }
        return length
    }
}
