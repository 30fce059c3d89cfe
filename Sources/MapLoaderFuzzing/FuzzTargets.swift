import Foundation
import MapLoader

/// The code paths that read untrusted bytes, each as one function of an input: used by
/// the libFuzzer executable (`scripts/fuzz.sh`) and by the regression tests that replay
/// every input the fuzzer ever found.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// `catalog.json` decoding and checks.
    case catalog
    /// `manifest.json` decoding and structural checks.
    case manifest
    /// tar.gz / tar.zst extraction with limits.
    case archive

    /// Feeds `data` to the target. Any thrown error is a correct refusal; only a crash,
    /// hang or unbounded allocation is a finding.
    public func run(_ data: Data, scratch: URL) {
        switch self {
        case .catalog:
            _ = try? JSONCoding.decode(Catalog.self, from: data)
            _ = try? JSONCoding.decode(CatalogSignature.self, from: data)
        case .manifest:
            if let manifest = try? JSONCoding.decode(Manifest.self, from: data) {
                _ = ManifestValidation.problem(in: manifest)
                _ = Locator.smallestNode(containing: 52.5, 13.4, in: manifest.root)
            }
        case .archive:
            let file = scratch.appendingPathComponent("input")
            let destination = scratch.appendingPathComponent("out")
            try? FileManager.default.removeItem(at: destination)
            try? FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
            guard (try? data.write(to: file)) != nil else { return }
            _ = try? ArchiveExtractor.extract(file, into: destination, limits: .init(files: 64, bytes: 1 << 20))
        }
    }
}
