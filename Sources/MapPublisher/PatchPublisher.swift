import Foundation
import MapLoader

/// Chooses and writes the patch edges of each changed group (filled in by the delta codec).
struct PatchPublisher {
    let site: SiteWriter
    let previous: [Manifest]
    let depth: Int
    let version: String

    /// The edges that reach `artifact`'s tree.
    mutating func edges(for package: String, group: String, newTree: URL, artifact: Artifact,
                        report: inout PublishReport, log: (String) -> Void) throws -> [PatchEdge]? {
        nil
    }
}
