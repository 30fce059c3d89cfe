import MapDelta
import Testing

@testable import MapPublisher

/// The publish log's line of where a file's trials spent their time (``PatchStats/File/trialTimes``).
@Suite struct TrialTimesTests {
    static func file(seconds: [PatchEncoding: Double]) -> PatchStats.File {
        var file = PatchStats.File(
            path: "cities.json", operation: .patch, size: 30_000_000, source: "cities.json", encoding: .wholeCrossDelta,
            payloadBytes: 293_000, tried: [.wholeCrossDelta: 293_000, .delta: 988_000, .sparseSuffixDelta: 894_000], note: nil)
        file.seconds = seconds
        return file
    }

    @Test func theSlowestTrialComesFirstAndTheKeptOneIsMarked() {
        let file = Self.file(seconds: [.delta: 0.2, .wholeCrossDelta: 47.24, .sparseSuffixDelta: 9.1])
        #expect(
            file.trialTimes
                == "whole-cross-delta 293 kB in 47.2 s (kept), sparse-suffix-delta 894 kB in 9.1 s, delta 988 kB in 0.2 s")
    }

    @Test func aFileWhoseTrialsTookLessThanTenSecondsHasNoLine() {
        #expect(Self.file(seconds: [.delta: 4.9, .wholeCrossDelta: 5.0]).trialTimes == nil)
        #expect(Self.file(seconds: [.delta: 5.0, .wholeCrossDelta: 5.0]).trialTimes != nil)
    }
}
