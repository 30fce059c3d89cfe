import Foundation
import MapModel
import MapPlatform
import MapPublisher
import MapTestSupport
import Testing

@testable import MapDelta

/// Patches as this version of the publisher wrote them, stored in `StoredPatches/`: each
/// must keep decoding to the same new tree, byte for byte, whatever the codec's code
/// becomes (a reshaped decoder, a part moved to its own file). Each scenario builds its old
/// and new trees from seeded fixtures; `index.json` lists the wire encodings its patch
/// holds, which the test checks against the stored bytes, and together they cover every
/// ``PatchEncoding`` but those named in ``notStoredYet``.
///
/// `MAPLOADER_RECORD_PATCHES=1` rebuilds the patches and the index (after a deliberate
/// change of the wire format only).
@Suite(.serialized) struct StoredPatchTests {
    /// One stored patch: its trees and the options it was published with.
    struct Scenario: Sendable, CustomTestStringConvertible {
        let name: String
        let options: PatchOptions
        let write: @Sendable (_ root: URL, _ revision: Int) throws -> Void
        var testDescription: String { name }
    }

    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("StoredPatches")
    static let recording = ProcessInfo.processInfo.environment["MAPLOADER_RECORD_PATCHES"] == "1"

    /// Wire encodings no scenario yields yet, a scenario for each still to be found: the
    /// chooser keeps the suffix-delta expansion over the frame for every PMTiles pair here
    /// (a new archive too, of gzip or zstd tiles), the frame over the suffix delta for every MBTiles pair, and the
    /// segments of one file over segments across references for these cuts.
    static let notStoredYet: Set<PatchEncoding> = [
        .scannedDeflateDelta, .scannedZstdDelta, .suffixGatheredDeflateDelta, .segmentedCrossDelta,
    ]

    static func seeded(_ count: Int, seed: UInt64) -> Data {
        var generator = SeededGenerator(seed: seed)
        return Data((0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
    }

    static let withoutLzma = {
        var options = PatchOptions(level: 19)
        options.lzma = false
        return options
    }()

    /// Every trial but the whole-file suffix delta, which wins on these cuts.
    static let segmentsAndReferences = {
        var options = PatchOptions.comparingEvery(level: 3, segmentLength: 256 << 10)
        options.wholeRawFileSuffix = false
        return options
    }()

    static let scenarios: [Scenario] =
        [
            // Small files, every trial: LZMA2 on.
            Scenario(name: "small", options: PatchOptions(level: 19)) { root, revision in
                try FileManager.default.createDirectory(at: root.appendingPathComponent("cities"), withIntermediateDirectories: true)
                try CrossFileTests.writeGazetteer(root.appendingPathComponent("cities"), revision: revision)
                try SuffixDeltaTests.writeCoordinates(root.appendingPathComponent("coordinates.bin"), revision: revision)
                try FilteredSuffixDeltaTests.writeBoundary(root.appendingPathComponent("boundary.bin"), revision: revision)
                if revision == 2 {
                    try seeded(4096, seed: 3).write(to: root.appendingPathComponent("random.bin"))
                    try Data(String(repeating: "Berlin, Hamburg, Munich, Cologne; ", count: 200).utf8).write(
                        to: root.appendingPathComponent("notes.txt"))
                }
            },
            // The same without LZMA2: zstd's payloads.
            Scenario(
                name: "small-zstd",
                options: Self.withoutLzma
            ) { root, revision in
                try FileManager.default.createDirectory(at: root.appendingPathComponent("cities"), withIntermediateDirectories: true)
                try CrossFileTests.writeGazetteer(root.appendingPathComponent("cities"), revision: revision)
                var text = String(repeating: "Berlin, Hamburg, Munich, Cologne; ", count: 400)
                if revision == 2 { text += "Dresden." }
                try Data(text.utf8).write(to: root.appendingPathComponent("notes.txt"))
                if revision == 2 {
                    try Data(String(repeating: "Leipzig, Bremen; ", count: 200).utf8).write(to: root.appendingPathComponent("new.txt"))
                }
            },
            // Containers seen through: zip, PBF, PNG, gzip, PMTiles (scanned), MBTiles (gathered).
            Scenario(name: "containers", options: PatchOptions(level: 19)) { root, revision in
                try SeeThroughTests.writeContainers(root, revision: revision)
                try LargeFixtures.writeGeoJSONRelease(root.appendingPathComponent("geojson"), renamed: revision == 1 ? 0 : 40)
                try TileArchiveTests.writePMTiles(root.appendingPathComponent("tiles.pmtiles"), revision: revision)
                try MBTilesTests.write(root.appendingPathComponent("tiles.mbtiles"), revision: revision, schema: .plain)
                try TileArchiveTests.writePMTiles(root.appendingPathComponent("scattered.pmtiles"), revision: revision, changed: 40, clustered: false)
                try MBTilesTests.write(root.appendingPathComponent("shared.mbtiles"), revision: revision, schema: .deduplicated, changed: 40)
                try MBTilesTests.write(root.appendingPathComponent("few.mbtiles"), revision: revision, schema: .plain, changed: 2)
                try MBTilesTests.write(root.appendingPathComponent("many.mbtiles"), revision: revision, schema: .plain, changed: 100)
                // A new archive has no old expansion: its own scanned frame.
                if revision == 2 { try TileArchiveTests.writePMTiles(root.appendingPathComponent("added.pmtiles"), revision: 1) }
            },
            // Redrawn coordinates: extra bytes filtered.
            Scenario(name: "filtered", options: PatchOptions(level: 9)) { root, revision in
                try FilteredSuffixDeltaTests.writeBoundary(root.appendingPathComponent("boundary.bin"), revision: revision)
            },
            // Files above the segment threshold, every trial: segments over several references.
            Scenario(name: "cross-segments", options: Self.segmentsAndReferences) { root, revision in
                try WholeCrossFrameTests.writeCuts(root.appendingPathComponent("cuts"), revision: revision, records: 1500)
            },
            // Files above the segment threshold, segments only.
            Scenario(name: "segments", options: .segmentsOnly(level: 3, segmentLength: 256 << 10)) { root, revision in
                try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
                try WholeCrossFrameTests.writeCuts(root.appendingPathComponent("cuts"), revision: revision, records: 1500)
                try LargeFixtures.writeGzip(root.appendingPathComponent("places.csv.gz"), megabytes: 1, members: 1, edits: revision == 1 ? 0 : 30)
                try MBTilesTests.write(root.appendingPathComponent("tiles.mbtiles"), revision: revision, schema: .plain)
                try TileArchiveTests.writePMTiles(root.appendingPathComponent("tiles.pmtiles"), revision: revision)
            },
            // Whole-file trials above the threshold: one frame over references, a sparse suffix delta.
            Scenario(
                name: "whole", options: .comparingEvery(level: 3, segmentLength: 1 << 20, wholeFileSuffix: true, wholeCrossFrame: true)
            ) { root, revision in
                try WholeCrossFrameTests.writeCuts(root.appendingPathComponent("cuts"), revision: revision)
                let (old, new) = LargeFixtures.gazetteerPair(size: 3 << 20, overwrites: 10, insertions: 2, seed: 9)
                try Data(revision == 1 ? old : new).write(to: root.appendingPathComponent("places.csv"))
                try LargeFixtures.writeGzip(root.appendingPathComponent("places.csv.gz"), megabytes: 3, members: 1, edits: revision == 1 ? 0 : 30)
            },
            // PMTiles archives of zstd tiles, seen through their frames: a patch only a client
            // of the recorded zstd applies (others skip it, as they plan the full archive).
            Scenario(name: "zstd-tiles", options: Self.zstdFrames(PatchOptions(level: 19))) { root, revision in
                try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
                try TileArchiveTests.writePMTiles(root.appendingPathComponent("tiles.pmtiles"), revision: revision, zstdLevel: 3)
                try TileArchiveTests.writePMTiles(
                    root.appendingPathComponent("scattered.pmtiles"), revision: revision, changed: 40, clustered: false, zstdLevel: 9)
            },
            Scenario(
                name: "zstd-segments", options: Self.zstdFrames(.segmentsOnly(level: 3, segmentLength: 256 << 10))
            ) { root, revision in
                try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
                try TileArchiveTests.writePMTiles(root.appendingPathComponent("tiles.pmtiles"), revision: revision, zstdLevel: 3)
            },
        ] + lzmaScenarios

    /// `options` with zstd frames seen through (``PatchOptions/zstdFrames``).
    static func zstdFrames(_ options: PatchOptions) -> PatchOptions {
        var options = options
        options.zstdFrames = true
        return options
    }

    #if LZMA
        /// Map tiles, a few kilobytes of small numbers each: LZMA2 payloads.
        static let lzmaScenarios = [
            Scenario(name: "tiles", options: PatchOptions(level: 19)) { root, revision in
                let made = TemporaryDirectory("stored-tiles")
                try LzmaDeltaTests.writeTiles(made)
                try FileManager.default.copyItem(at: made.path(revision == 1 ? "old" : "new"), to: root)
            }
        ]
    #else
        static let lzmaScenarios: [Scenario] = []
    #endif

    /// The encodings of a patch's payloads.
    static func encodings(of patch: URL) throws -> Set<PatchEncoding> {
        let opened = try OpenedPatch(url: patch)
        return Set(
            opened.manifest.targets.compactMap { target in
                switch target.origin {
                case .add(let payload), .patch(_, let payload): payload.encoding
                default: nil
                }
            })
    }

    static func index() throws -> [String: [String]] {
        try JSONDecoder().decode([String: [String]].self, from: Data(contentsOf: folder.appendingPathComponent("index.json")))
    }

    @Test(arguments: scenarios)
    func aStoredPatchDecodesToTheSameTree(_ scenario: Scenario) async throws {
        let dir = TemporaryDirectory("stored-\(scenario.name)")
        try await RawThread.run {
            try scenario.write(dir.path("old"), 1)
            try scenario.write(dir.path("new"), 2)
        }
        let stored = Self.folder.appendingPathComponent("\(scenario.name).mlpatch")
        if Self.recording {
            let options = scenario.options
            _ = try await RawThread.value { try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: stored, options: options) }
            var index = (try? Self.index()) ?? [:]
            index[scenario.name] = try Self.encodings(of: stored).map(\.description).sorted()
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try (encoder.encode(index) + Data("\n".utf8)).write(to: Self.folder.appendingPathComponent("index.json"))
            try Data("zstd \(ZstdFrame.libraryVersion)\n".utf8).write(to: Self.folder.appendingPathComponent("recorded-with.txt"))
        }
        let recorded = try #require(try Self.index()[scenario.name], "no stored patch for \(scenario.name)")
        let needed = Set(try Self.encodings(of: stored).compactMap(\.optionalCodec))
        guard needed.isSubset(of: PatchCodecs.available) else {
            // A build without liblzma (an app's) refuses these patches up front, as a client does.
            return
        }
        #expect(try Self.encodings(of: stored).map(\.description).sorted() == recorded)
        let out = dir.path("out")
        _ = try await RawThread.value { try PatchApplier.apply(patch: stored, oldTree: dir.path("old"), into: out) }
        #expect(try snapshot(out) == snapshot(dir.path("new")))
    }

    /// The zstd the patches were recorded with (`recorded-with.txt`): another version may
    /// write other bytes for the same choices.
    static func recordedWith() throws -> String {
        try String(contentsOf: folder.appendingPathComponent("recorded-with.txt"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The publisher writes each stored patch again byte for byte, choosing the files'
    /// payloads on four threads: the stored ones were written one file after another, so a
    /// patch's bytes depend neither on the number of threads nor on which file's trials end
    /// first (and a change of the codec's bytes shows here before the bench). A build with
    /// another zstd, or without a codec a patch uses, compares four threads with one.
    @Test(arguments: scenarios)
    func thePublisherWritesTheStoredPatchAgainOnFourThreads(_ scenario: Scenario) async throws {
        guard !Self.recording else { return }
        let storedPath = Self.folder.appendingPathComponent("\(scenario.name).mlpatch")
        let sameCodecs =
            try Self.recordedWith() == "zstd \(ZstdFrame.libraryVersion)"
            && Set(try Self.encodings(of: storedPath).compactMap(\.optionalCodec)).isSubset(of: PatchCodecs.available)
        let dir = TemporaryDirectory("rewritten-\(scenario.name)")
        try await RawThread.run {
            try scenario.write(dir.path("old"), 1)
            try scenario.write(dir.path("new"), 2)
        }
        var stored = sameCodecs ? try Data(contentsOf: storedPath) : nil
        for jobs in sameCodecs ? [4] : [1, 4] {
            var options = scenario.options
            (options.fileJobs, options.segmentJobs) = (jobs, jobs)
            let fixed = options
            let output = dir.path("patch-\(jobs)")
            _ = try await RawThread.value { try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: output, options: fixed) }
            let written = try Data(contentsOf: output)
            guard let expected = stored else {
                stored = written
                continue
            }
            #expect(written == expected, "\(scenario.name) on \(jobs) thread(s): \(written.count) B, expected \(expected.count) B")
        }
    }

    /// The stored patches hold every wire encoding but the ones named as not stored yet.
    @Test(.enabled(if: PatchCodecs.available.contains(PatchCodecs.lzma), "the LZMA2 scenario is stored only where liblzma is"))
    func everyWireEncodingHasAStoredPatch() throws {
        let stored = Set(try Self.index().values.flatMap { $0 })
        let named = Set(PatchEncoding.allCases.map(\.description))
        #expect(stored.isSubset(of: named))
        #expect(stored.isDisjoint(with: Self.notStoredYet.map(\.description)))
        #expect(named.subtracting(stored) == Set(Self.notStoredYet.map(\.description)), "stored: \(stored.sorted())")
    }
}
