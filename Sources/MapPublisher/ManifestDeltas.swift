import Foundation
import MapModel
import MapPlatform

/// The manifest of a new version as zstd deltas from the manifests of the versions before
/// it, so that a device that kept one of them (it polled or installed it) fetches a few
/// hundred bytes where the packed manifest costs more.
enum ManifestDeltas {
    /// Writes a delta from each of the newest earlier versions whose manifest JSON is
    /// pinned and still on the site, when it is smaller than the packed manifest.
    static func write(json: Data, packedSize: Int, previous: Catalog?, site: SiteWriter) throws {
        let target = FileHashing.sha256(of: json)
        for older in (previous?.versions ?? []).suffix(SiteLayout.manifestDeltaDepth) {
            guard let base = older.unpacked, base.sha256 != target,
                let packed = try? Data(contentsOf: site.root.appendingPathComponent(older.manifest)),
                let oldJSON = base.unpack(packed)
            else { continue }
            // No checksum: the device checks what it rebuilds against the manifest's pin.
            let delta = try ZstdFrame.compress(Array(json), level: 19, prefix: Array(oldJSON), checksum: false)
            guard delta.count < packedSize else { continue }
            try site.write(Data(delta), at: SiteLayout.manifestDelta(to: target, from: base.sha256))
        }
    }
}
