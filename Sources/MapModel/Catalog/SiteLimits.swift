/// The largest numbers MapLoader accepts from a site, signed or not: a catalog, manifest
/// or part with a number outside these is refused as invalid metadata (exit 6) before
/// anything adds, multiplies or allocates with it. Each bound is far beyond any real map
/// release and far enough below `Int64.max` that no sum of a manifest's numbers can trap.
package enum SiteLimits {
    /// Bytes of one blob (archive or patch): 16 TiB.
    package static let blobBytes: Int64 = 1 << 44
    /// Bytes of one group's unpacked files: 64 TiB.
    package static let unpackedBytes: Int64 = 1 << 46
    /// Files in one group: about 16.7 million.
    package static let files = 1 << 24
    /// Bytes of one manifest or manifest part as fetched (they are read whole into memory).
    package static let metadataBytes: Int64 = 64 << 20
    /// Patch edges one artifact may list: years of weekly releases, each with patches from
    /// several versions back (the cheapest chain through them is planned for every group).
    package static let patchesPerArtifact = 1024
    /// Leaves one manifest part may claim.
    package static let leaves = 1 << 24
    /// The highest catalog serial (leaves room to count on without overflow).
    package static let serial = 1 << 53

    /// Whether `value` is a count or size from a site that MapLoader accepts.
    package static func accepts(_ value: Int64, upTo limit: Int64) -> Bool { (0...limit).contains(value) }
}

extension FixedWidthInteger {
    /// `self + other`, or the nearest bound where that overflows: sums of sizes never trap.
    package func plusSaturating(_ other: Self) -> Self {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self × other`, or the nearest bound where that overflows.
    package func multipliedSaturating(by other: Self) -> Self {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? ((self < 0) == (other < 0) ? .max : .min) : product
    }
}

extension Sequence {
    /// The sum of `value` over the elements, saturating instead of trapping.
    package func saturatingSum(_ value: (Element) -> Int64) -> Int64 {
        reduce(0) { $0.plusSaturating(value($1)) }
    }
}
