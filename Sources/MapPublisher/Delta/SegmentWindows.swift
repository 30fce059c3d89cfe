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
/// keeps its first and its last place, and a segment's anchors vote for both: content
/// repeated in the old file (two releases of one data set in one archive) then sends a
/// segment to where it and its neighbours agree, the newest copy on a tie. The index
/// holds at most about a million anchors (`spacing` grows with the file), 80 MB at most.
package struct SegmentWindows: Sendable {
    /// Offsets of each anchor key (its first and last occurrence, equal when it occurs
    /// once) in the old files one after another.
    private let anchors: [UInt64: Places]

    /// Where one anchor key occurs.
    private struct Places: Sendable {
        var first: Int64
        var last: Int64
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

    /// The old file and the start in it of the window of up to `length` bytes that holds
    /// most of the anchors `new` (a segment of the new file) shares with the old files,
    /// the shared ones centred in it; `nil` when they share none.
    package func window(for new: UnsafeRawBufferPointer, length: Int64) -> (file: Int, offset: Int64)? {
        var hits: [Int64] = []
        Self.forEachAnchor(in: new, bits: bits) { key, _ in
            guard let places = anchors[key] else { return }
            hits.append(places.first)
            if places.last != places.first { hits.append(places.last) }
        }
        guard !hits.isEmpty else { return nil }
        hits.sort()
        var best = (count: 0, first: 0, last: 0)
        var first = 0
        for last in hits.indices {
            while hits[last] - hits[first] >= length { first += 1 }
            if last - first + 1 >= best.count { best = (last - first + 1, first, last) }  // a tie: the later place
        }
        let middle = (hits[best.first] + hits[best.last]) / 2
        let file = starts.lastIndex { $0 <= middle } ?? 0
        let fileSize = (file + 1 < starts.count ? starts[file + 1] : size) - starts[file]
        return (file, min(max(0, middle - starts[file] - length / 2), max(0, fileSize - length)))
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
