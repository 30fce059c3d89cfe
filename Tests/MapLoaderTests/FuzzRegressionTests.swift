import Foundation
import MapLoaderFuzzing
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
