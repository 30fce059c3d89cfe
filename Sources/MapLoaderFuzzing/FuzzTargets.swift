import Foundation
import MapDelta
import MapModel
import MapPlatform
import MapStore

/// The code paths that read untrusted bytes, each as one function of an input: used by
/// the libFuzzer executable (`scripts/fuzz.sh`) and by the regression tests that replay
/// every input the fuzzer ever found.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// `catalog.json` decoding and checks.
    case catalog
    /// `manifest.json` decoding and structural checks, split-manifest stubs and parts.
    case manifest
    /// tar.gz / tar.zst extraction with limits.
    case archive
    /// Patch containers: reading the manifest, then applying to a small fixed tree.
    case patch
    /// A patch's manifest, decompressed, fed to its decoder in every form with the limits
    /// of a small group: whatever it decodes must stay within them (a manifest past them
    /// is a finding), and `scripts/fuzz.sh` runs it with a small allocation limit.
    case patchManifest
    /// Deflate streams in gzip, zip, PBF and PNG files and found by scanning files of no
    /// known format (see-through deltas expand old files), and see-through recipes, in rows
    /// and in columns.
    case gzip
    /// The large-file and multi-file codecs' own framing, fed raw: segment tables, cross-file
    /// references and suffix-array deltas, decoded against a small fixed old file.
    case codecs
    /// SQLite databases (MBTiles) read for their overflow chains, the gathered order they
    /// give (which must put every byte back where it was), and gather maps fed raw.
    case tiles

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
                _ = manifest.stubs.map { $0.part?.bounds?.contains(lat: 52.5, lon: 13.4) }
                _ = try? manifest.split(maxLeaves: 2)
            }
            _ = try? Manifest.decodePart(data)
        case .archive:
            let file = scratch.appendingPathComponent("input")
            let destination = scratch.appendingPathComponent("out")
            try? FileManager.default.removeItem(at: destination)
            try? FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
            guard (try? data.write(to: file)) != nil else { return }
            _ = try? ArchiveExtractor.extract(file, into: destination, limits: .init(files: 64, bytes: 1 << 20))
        case .patch:
            let file = scratch.appendingPathComponent("input.patch")
            let old = Self.oldTree(in: scratch)
            let new = scratch.appendingPathComponent("new")
            try? FileManager.default.removeItem(at: new)
            guard (try? data.write(to: file)) != nil, (try? PatchContainer.manifest(at: file)) != nil else { return }
            _ = try? PatchApplier.apply(patch: file, oldTree: old, into: new, resumeIn: nil, limits: Self.limits)
        case .patchManifest:
            Self.runPatchManifest(Array(data))
        case .gzip:
            let file = scratch.appendingPathComponent("input.gz")
            guard (try? data.write(to: file)) != nil else { return }
            _ = try? DeflateRecipe.expand(
                file.path, streams: DeflateStreams.find(in: file.path),
                into: scratch.appendingPathComponent("expanded").path)
            _ = try? DeflateRecipe.expand(
                file.path, streams: DeflateStreams.scan(in: file.path),
                into: scratch.appendingPathComponent("expanded").path)
            // zstd frames as a scan finds them (PMTiles of zstd tiles).
            _ = try? DeflateRecipe.expand(
                file.path, streams: ZstdFrames.scan(in: file.path), codec: .zstd,
                into: scratch.appendingPathComponent("expanded").path)
            if let opened = try? SystemFile.openForReading(file.path) {
                _ = try? DeflateRecipe.decode(from: opened, at: 0, within: Int64(data.count))
                for codec in [EncodingParts.StreamCodec.deflate, .zstd] {
                    _ = try? DeflateRecipe.decodeColumns(
                        from: opened, at: 0, within: Int64(data.count), layout: [], codec: codec, displayPath: "fuzz")
                }
            }
            _ = try? DeflateRecipe(columns: Array(data))
            // The recipe of zstd frames, its version this build's so the columns are read.
            _ = try? DeflateRecipe(columns: withUnsafeBytes(of: ZstdFrames.version.littleEndian, Array.init) + data, codec: .zstd)
        case .codecs:
            let file = scratch.appendingPathComponent("input.payload")
            guard (try? data.write(to: file)) != nil, let opened = try? SystemFile.openForReading(file.path) else { return }
            let old = Array(Self.oldFiles[0].1.utf8)
            old.withUnsafeBytes { old in
                if let (table, length) = try? SegmentedDelta.decode(
                    from: opened, at: 0, within: Int64(data.count),
                    targetSize: 4096, oldSize: Int64(old.count), displayPath: "fuzz")
                {
                    try? table.decode(
                        from: opened, framesOffset: length, old: old, from: 0, displayPath: "fuzz",
                        output: { _ in }, finished: { _ in })
                }
                _ = try? CrossReferences.decode(from: opened, at: 0, within: Int64(data.count), displayPath: "fuzz")
                // Every form: plain, filtered (a stride byte of 1…8 first), see-through's (a
                // stride byte first that may be 0) and sparse (runs and replaced bytes).
                for form in [SuffixDelta.Form.plain, .filtered, .expansion, .sparse] {
                    try? SuffixDelta.decode(
                        from: opened, offset: 0, length: Int64(data.count), old: old, targetSize: 1 << 16,
                        displayPath: "fuzz", form: form, output: { _ in })
                }
            }
        case .tiles:
            Self.runTiles(data, scratch: scratch)
        }
    }

    /// What the patch targets' group declares: a small tree.
    static let limits = TreeLimits(files: 64, bytes: 1 << 20)

    /// Decodes `bytes` as a patch manifest of every form against ``limits`` and the fuzz
    /// tree's old files; anything decoded past them traps (a finding). The container is
    /// taken to end where the manifest's payloads do (the decoder says by how much a
    /// larger one is too long), so any manifest that parses is checked, not only those
    /// whose payloads happen to fill a fixed size.
    static func runPatchManifest(_ bytes: [UInt8]) {
        let old = oldFiles.map { (path: $0.0, size: Int64($0.1.utf8.count)) }
        func decode(form: Int, containerSize: Int64) throws -> PatchManifest {
            try PatchManifestDecoder.decode(
                bytes, form: form, payloadStart: 0, containerSize: containerSize, limits: limits, oldFiles: old.count)
        }
        for form in PatchFormat.forms {
            let whole: Int64 = 1 << 40
            var decoded = try? decode(form: form, containerSize: whole)
            if decoded == nil, case .corrupt(let detail)? = (Result { try decode(form: form, containerSize: whole) }.failure),
                detail.hasSuffix(" bytes after the last payload"), let extra = Int64(detail.prefix { $0.isNumber })
            {
                decoded = try? decode(form: form, containerSize: whole - extra)
            }
            guard let manifest = decoded else { continue }
            precondition(
                manifest.targets.count <= limits.files && manifest.targetBytes <= limits.bytes && manifest.sources.count <= old.count
                    && manifest.deletions.count <= old.count, "a manifest past its group's limits was decoded")
            if let whole = try? PatchManifestDecoder.keepingUnlisted(manifest, oldFiles: old, limits: limits) {
                precondition(whole.targets.count <= limits.files && whole.targetBytes <= limits.bytes, "kept files pass the limits")
            }
        }
    }

    /// Gathers the input as a database and scatters it back: anything but the same bytes is
    /// a finding, as is a map that is no permutation. Then decodes the input as map columns.
    private static func runTiles(_ data: Data, scratch: URL) {
        let file = scratch.appendingPathComponent("input.mbtiles")
        let gathered = scratch.appendingPathComponent("gathered")
        guard (try? data.write(to: file)) != nil else { return }
        let map = SQLiteOverflow.map(of: file.path)
        guard GatherMap(moves: map.moves, size: Int64(data.count)) != nil else { fatalError("the overflow map is no permutation") }
        if let input = try? SystemFile.openForReading(file.path), let output = try? SystemFile.createOrTruncate(gathered.path),
            (try? map.gather(input, size: Int64(data.count), into: output)) != nil,
            let back = try? SystemFile.openForReading(gathered.path)
        {
            var scattered = Data()
            try? map.scatter(back, size: Int64(data.count)) { scattered.append(contentsOf: $0) }
            guard scattered == data else { fatalError("gathering and scattering changed the bytes") }
        }
        _ = try? GatherMap(columns: Array(data), size: 1 << 20)
    }

    /// The old tree patches are applied to (the seed patch in `Tests/Fuzz/seeds/patch` diffs from it).
    public static func oldTree(in scratch: URL) -> URL {
        let old = scratch.appendingPathComponent("old")
        guard !FileManager.default.fileExists(atPath: old.path) else { return old }
        for (path, text) in oldFiles {
            let url = old.appendingPathComponent(path)
            try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try? Data(text.utf8).write(to: url)
        }
        return old
    }

    /// A small tree with a text file, a nested file and a duplicate.
    public static let oldFiles: [(String, String)] = [
        ("roads.csv", (0..<200).map { "\($0),Road \($0),\($0 % 7)\n" }.joined()),
        ("tiles/1/2.mvt", String(repeating: "tile-1-2 ", count: 50)),
        ("tiles/1/3.mvt", String(repeating: "tile-1-2 ", count: 50)),
        ("meta.json", "{\"version\": 1}"),
    ]
}

extension Result {
    /// The error of a failure, as a ``PatchError``; `nil` for a success or another error.
    fileprivate var failure: PatchError? {
        if case .failure(let error) = self { return error as? PatchError }
        return nil
    }
}
