import MapPlatform

/// Where things live on a site, relative to its root URL.
package enum SiteLayout {
    /// The catalog.
    package static let catalog = "catalog.json"
    /// The catalog's detached signature.
    package static let catalogSignature = "catalog.json.sig"
    /// The small signed file that pins the catalog (``CatalogTimestamp``): what a device polls.
    package static let timestamp = "timestamp.json"

    /// The catalog with SHA-256 `sha256` as a zstd delta from the catalog with SHA-256
    /// `previous` (its prefix): what a device that kept the previous catalog fetches.
    package static func catalogDelta(to sha256: String, from previous: String) -> String {
        "\(catalogDeltas(to: sha256))\(previous).zst"
    }
    /// Where every delta to the catalog with SHA-256 `sha256` begins (the paths `prune` keeps).
    package static func catalogDeltas(to sha256: String) -> String { "\(deltas)/catalog-\(sha256)-from-" }
    /// The manifest whose JSON has SHA-256 `sha256` as a zstd delta from the manifest JSON
    /// with SHA-256 `previous` (its prefix): what a device that kept that manifest fetches.
    package static func manifestDelta(to sha256: String, from previous: String) -> String {
        "\(manifestDeltas(to: sha256))\(previous).zst"
    }
    /// How many of the versions just before a new one the publisher writes a manifest
    /// delta from (a device further behind reads the packed manifest).
    package static let manifestDeltaDepth = 4
    /// Where every delta to the manifest JSON with SHA-256 `sha256` begins.
    package static func manifestDeltas(to sha256: String) -> String { "\(deltas)/manifest-\(sha256)-from-" }
    /// The folder of metadata deltas.
    package static let deltas = "deltas"

    /// The manifest of `version`: compact JSON in one zstd frame (a tenth of the bytes).
    package static func manifest(_ version: String) -> String { "versions/\(version)/manifest.json.zst" }

    /// The files of one data group, by tree hash, in a site made by `maploader export`
    /// (which carries installed files rather than archives).
    package static func tree(_ treeHash: String) -> String { "trees/\(treeHash)" }

    /// The content-addressed blob with this SHA-256.
    package static func blob(_ sha256: String) -> String { "blobs/sha256/\(sha256.prefix(2))/\(sha256)" }
}
