/// Where each segment of a new file most likely comes from in the old files (its own old
/// version, and for a cross-file delta other files, one after another), for
/// ``SegmentedEncoder``: content-defined anchors of the old files are indexed, a new
/// segment's anchors are looked up, and the window inside one old file that holds most
/// of them is chosen.
/// Data moved further than a window's margin (a release appended to an archive, a record
/// block inserted early in a file) is then still found, where the same relative position
/// would miss it.
///
/// An anchor is a position where a gear hash of the preceding 64 bytes has its top bits
/// zero (one position in ``spacing`` on average, whatever the data); its key is the hash
/// itself, so equal content gives equal anchors on both sides. A key found several times
/// keeps its first and its last place, and a segment's anchors vote for both, by runs
/// (``window(for:length:)``): content repeated in the old file (two releases of one data
/// set in one archive, population cuts of one gazetteer) then sends a segment to where
/// it and its neighbours agree, the newest copy on a tie. The index
/// holds at most about a million anchors (`spacing` grows with the file), 80 MB at most.
package struct SegmentWindows: Sendable {
    /// Offsets of each anchor key (its first and last occurrence, equal when it occurs
    /// once) in the old files one after another.
    private let anchors: [UInt64: Places]

    /// Where one anchor key occurs.
    private struct Places: Sendable {
        var first: Int64
        var last: Int64
        /// Both places, once when they are one.
        var all: [Int64] { first == last ? [first] : [first, last] }
    }
    /// Bits that must be zero at the top of the hash for an anchor.
    private let bits: Int
    /// Where each old file starts in the sequence, and the sequence's end.
    let starts: [Int64]
    let size: Int64

    /// Average bytes between anchors.
    var spacing: Int { 1 << bits }

    /// Indexes the anchors of the old files `old`, in this order.
    package init(old: [UnsafeRawBufferPointer]) {
        var starts: [Int64] = []
        var size: Int64 = 0
        for file in old {
            starts.append(size)
            size += Int64(file.count)
        }
        (self.starts, self.size) = (starts, size)
        var bits = 12
        while size >> bits > 1 << 20 { bits += 1 }
        self.bits = bits
        var anchors: [UInt64: Places] = [:]
        anchors.reserveCapacity(Int(size >> bits) + 16)
        for (file, start) in zip(old, starts) {
            Self.forEachAnchor(in: file, bits: bits) { key, offset in
                let place = start + Int64(offset)
                anchors[key, default: Places(first: place, last: place)].last = place
            }
        }
        self.anchors = anchors
    }

    /// The old file and the start in it of the window of up to `length` bytes where `new`
    /// (a segment of the new file) most likely comes from; `nil` when the two share no
    /// anchor.
    ///
    /// Runs first: two anchors in a row of the segment found the same distance apart in
    /// the old files vote, with the bytes between them, for that place (a diagonal: old
    /// offset minus new offset); the heaviest cluster of diagonals no wider than a
    /// thirty-second of the window's slack (1 MiB of the default 32 MiB) places the window.
    /// Insertions and deletions move the diagonal a little, and the slack covers that; a
    /// wider cluster let a copy whose votes are spread over megabytes (records
    /// interleaved with others) outweigh the one run: 10.0 M bytes of votes over 8 MiB
    /// against 9.6 M at one place, on a segment of a gazetteer's cuts. Where no two
    /// anchors agree, the window that holds the most anchor places. Runs matter where the
    /// old files repeat the segment's records in another order or interleaved with others
    /// (a gazetteer's population cuts, one after another): every record is found there
    /// too, but in pieces, each costing an offset; counted by places alone, such a copy
    /// outvotes the one the segment was cut from.
    package func window(for new: UnsafeRawBufferPointer, length: Int64) -> (file: Int, offset: Int64)? {
        var hits: [(at: Int64, places: Places)] = []
        Self.forEachAnchor(in: new, bits: bits) { key, offset in
            if let places = anchors[key] { hits.append((Int64(offset), places)) }
        }
        guard !hits.isEmpty else { return nil }
        let slack = max(0, length - Int64(new.count))
        if let run = runWindow(hits, segment: Int64(new.count), slack: slack) {
            return place(run.centre, length: length, in: run.file)
        }
        let centre = densestWindow(hits, length: length)
        return place(centre, length: length, in: file(holding: centre))
    }

    /// The window's centre (over the old files one after another) from runs of anchors:
    /// the diagonals two anchors in a row agree on, weighted by the bytes between them;
    /// and the old file that holds most of the winning votes' places (a centre near the
    /// end of one file may belong to a run in the next).
    private func runWindow(
        _ hits: [(at: Int64, places: Places)], segment: Int64, slack: Int64
    ) -> (centre: Int64, file: Int)? {
        var votes: [(diagonal: Int64, weight: Int64, place: Int64)] = []
        for (a, b) in zip(hits, hits.dropFirst()) {
            let gap = b.at - a.at
            for p in a.places.all where b.places.all.contains(p + gap) {
                votes.append((p - a.at, gap, p))
            }
        }
        guard !votes.isEmpty else { return nil }
        votes.sort { $0.diagonal < $1.diagonal }
        let width = max(1, slack / 32)
        var best = (weight: Int64(0), first: 0, last: 0)
        var first = 0
        var weight: Int64 = 0
        for last in votes.indices {
            weight += votes[last].weight
            while votes[last].diagonal - votes[first].diagonal > width {
                weight -= votes[first].weight
                first += 1
            }
            if weight >= best.weight { best = (weight, first, last) }  // a tie: the later place
        }
        // The cluster's diagonals span at most `width`: the window holds the segment at any
        // of them, with the rest of the slack on both sides.
        let middle = (votes[best.first].diagonal + votes[best.last].diagonal) / 2
        var byFile: [Int: Int64] = [:]
        for vote in votes[best.first...best.last] { byFile[file(holding: vote.place), default: 0] += vote.weight }
        let file = byFile.max { $0.value < $1.value || ($0.value == $1.value && $0.key < $1.key) }?.key ?? 0
        return (middle + segment / 2, file)
    }

    /// The window's centre (over the old files one after another) where the most anchor
    /// places lie within `length` bytes, the later on a tie.
    private func densestWindow(_ hits: [(at: Int64, places: Places)], length: Int64) -> Int64 {
        var places = hits.flatMap { $0.places.all }
        places.sort()
        var best = (count: 0, first: 0, last: 0)
        var first = 0
        for last in places.indices {
            while places[last] - places[first] >= length { first += 1 }
            if last - first + 1 >= best.count { best = (last - first + 1, first, last) }  // a tie: the later place
        }
        return (places[best.first] + places[best.last]) / 2
    }

    /// The old file holding `place` (an offset over the old files one after another).
    private func file(holding place: Int64) -> Int {
        starts.lastIndex { $0 <= place } ?? 0
    }

    /// The start in old file `file` of a window of `length` bytes centred at `centre` (an
    /// offset over the old files one after another), kept inside that file.
    private func place(_ centre: Int64, length: Int64, in file: Int) -> (file: Int, offset: Int64) {
        let fileSize = (file + 1 < starts.count ? starts[file + 1] : size) - starts[file]
        return (file, min(max(0, centre - starts[file] - length / 2), max(0, fileSize - length)))
    }

    /// Calls `body` with the key and offset (just past the hashed bytes) of each anchor.
    static func forEachAnchor(in bytes: UnsafeRawBufferPointer, bits: Int, _ body: (UInt64, Int) -> Void) {
        let shift = UInt64(64 - bits)
        var hash: UInt64 = 0
        // At least 64 bytes between anchors: a run of one repeated byte (a hash that
        // stays put) yields one anchor per 64 bytes, not one per byte.
        var next = 64
        gear.withUnsafeBufferPointer { table in
            for (offset, byte) in bytes.enumerated() {
                hash = hash &<< 1 &+ table[Int(byte)]
                if hash >> shift == 0, offset >= next {
                    body(hash, offset + 1)
                    next = offset + 64
                }
            }
        }
    }

    /// The gear table: 256 fixed pseudo-random words (SplitMix64 from a fixed seed), so
    /// anchors are the same on every run and machine.
    private static let gear: [UInt64] = {
        var state: UInt64 = 0x4D61_704C_6F61_6465
        return (0..<256).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }()
}
