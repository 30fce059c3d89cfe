import Foundation
import MapLoaderFuzzing
import MapPublisher
import MapTestSupport
import Testing

/// Replays every seed and every input the fuzzer found (`Tests/Fuzz/<target>/`) through the
/// same code the fuzzer runs: a regression brings back the crash.
@Suite struct FuzzRegressionTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    static func inputs(_ target: FuzzTarget) -> [URL] {
        [root.appendingPathComponent("seeds/\(target.rawValue)"), root.appendingPathComponent(target.rawValue)].flatMap {
            (try? FileManager.default.contentsOfDirectory(at: $0, includingPropertiesForKeys: nil)) ?? []
        }
    }

    @Test(arguments: FuzzTarget.allCases)
    func replay(target: FuzzTarget) throws {
        let inputs = Self.inputs(target)
        #expect(!inputs.isEmpty, "Tests/Fuzz/seeds/\(target.rawValue) holds at least one seed")
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-replay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        for input in inputs { target.run(try Data(contentsOf: input), scratch: scratch) }
    }
}

/// The patch fuzz target's seed: a real patch over `FuzzTarget.oldFiles`, which must apply.
@Suite struct FuzzPatchSeedTests {
    @Test func seedPatchAppliesThroughTheFuzzHarness() throws {
        let dir = TemporaryDirectory()
        let old = FuzzTarget.oldTree(in: dir.url)
        let new = dir.path("target")
        try FileManager.default.copyItem(at: old, to: new)
        try Data(((0..<200).map { "\($0),Road \($0),\($0 % 7)\n" }.joined() + "200,New road,1\n").utf8)
            .write(to: new.appendingPathComponent("roads.csv"))
        try FileManager.default.moveItem(at: new.appendingPathComponent("tiles/1/3.mvt"), to: new.appendingPathComponent("tiles/2.mvt"))
        try Data("added".utf8).write(to: new.appendingPathComponent("added.txt"))
        try FileManager.default.removeItem(at: new.appendingPathComponent("meta.json"))
        let patch = dir.path("seed.patch")
        _ = try PatchBuilder.build(from: old, to: new, output: patch)
        // The harness applies it into scratch/new: the result must be the target tree.
        FuzzTarget.patch.run(try Data(contentsOf: patch), scratch: dir.url)
        #expect(try snapshot(dir.path("new")) == snapshot(new))
        if ProcessInfo.processInfo.environment["MAPLOADER_WRITE_FUZZ_SEEDS"] == "1" {
            try Data(contentsOf: patch).write(to: FuzzRegressionTests.root.appendingPathComponent("seeds/patch/seed.patch"))
        }
    }
}
