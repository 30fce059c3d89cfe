import MapDelta
import MapPlatform

/// Whether a cross-file delta can beat the delta from the base alone, estimated from
/// content-defined anchors: positions where a gear rolling hash (the last 64 bytes) has
/// its low bits zero, about one in 64 bytes, in each file. An anchor of the new file that
/// the base has is content the base delta already matches; one that only another
/// reference has is what a cross-file delta could match in addition; one that no file
/// has is new content either delta pays for. One pass over each file; the anchors are
/// thinned for a new file over 64 MiB (one bit more of the hash per doubling), so the
/// sets hold about a million anchors per file of that size at most (the references are
/// at most four times the file): about 100 MB whatever the size.
struct CrossFileEstimate: Equatable {
    /// Distinct anchors of the new file.
    var anchors = 0
    /// Of those, found in the base.
    var inBase = 0
    /// Found in another reference but not in the base.
    var elsewhere = 0

    /// Anchors in no file: content both deltas pay for.
    var novel: Int { anchors - inBase - elsewhere }

    /// Whether the other references could save so little (under a tenth of what the
    /// base delta pays for) that the trial, a whole-file encode, is not worth its time.
    /// Where a cross-file delta won (a cut that repeats a file before it) nearly every
    /// anchor the base lacked was elsewhere; on timezone polygons, where 3.6-4.1% were,
    /// the trial (30 s of 60) gave not one byte less.
    var rulesOutCrossTrial: Bool { elsewhere * 10 < novel + elsewhere }

    /// What the publish log says of the estimate.
    var note: String {
        "cross-file trial \(rulesOutCrossTrial ? "skipped" : "run"): of \(anchors) anchors of the file, \(elsewhere) are only in the other files and \(novel) in none"
    }

    /// Anchors of `newPath` against `basePath` and `otherPaths`; `nil` when a file cannot be read.
    static func of(newPath: String, basePath: String, otherPaths: [String]) -> CrossFileEstimate? {
        guard let size = FileStatus.of(newPath)?.size else { return nil }
        let mask = anchorMask(forFileOf: size)
        guard let base = anchors(of: basePath, mask: mask) else { return nil }
        var others = Set<UInt64>()
        for path in otherPaths {
            guard let set = anchors(of: path, mask: mask) else { return nil }
            others.formUnion(set.subtracting(base))
        }
        guard let new = anchors(of: newPath, mask: mask) else { return nil }
        var estimate = CrossFileEstimate(anchors: new.count)
        for anchor in new {
            if base.contains(anchor) {
                estimate.inBase += 1
            } else if others.contains(anchor) {
                estimate.elsewhere += 1
            }
        }
        return estimate
    }

    /// The distinct anchor values of the file at `path` (mapped, read once): positions
    /// where the hash's bits in `mask` are zero.
    static func anchors(of path: String, mask: UInt64) -> Set<UInt64>? {
        guard let file = try? MappedFile.source(path, displayPath: path) else { return nil }
        let bytes = file.bytes.bindMemory(to: UInt8.self)
        var set = Set<UInt64>()
        var hash: UInt64 = 0
        gear.withUnsafeBufferPointer { gear in
            for byte in bytes {
                hash = (hash &<< 1) &+ gear[Int(byte)]
                if hash & mask == 0 { set.insert(hash) }
            }
        }
        return set
    }

    /// One anchor in about 64 positions up to 64 MiB, one bit more per doubling above:
    /// the high bits, which depend on the last 64 bytes (the low ones on the last few).
    static func anchorMask(forFileOf size: Int64) -> UInt64 {
        var bits = 6
        while bits < 30, size > Int64(1) << (bits + 20) { bits += 1 }
        return ~UInt64(0) << (64 - bits)
    }

    /// The gear table: 256 fixed pseudo-random words (splitmix64 from a fixed seed).
    static let gear: [UInt64] = {
        var state: UInt64 = 0x6D61_706C_6F61_6465
        return (0..<256).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }()
}
