import MapDelta
import Testing

@testable import MapPublisher

/// What the publisher says of a file: the publish log's line of where its trials spent
/// their time (``PatchStats/File/trialTimes``), and its notes, of which the patch edge
/// carries only those a publisher can act on.
@Suite struct TrialTimesTests {
    static func file(seconds: [PatchEncoding: Double]) -> PatchStats.File {
        var file = PatchStats.File(
            path: "cities.json", operation: .patch, size: 30_000_000, source: "cities.json", encoding: .wholeCrossDelta,
            payloadBytes: 293_000, tried: [.wholeCrossDelta: 293_000, .delta: 988_000, .sparseSuffixDelta: 894_000])
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

    @Test func theEdgeCarriesWhatAPublisherCanActOnAndTheLogEverything() {
        var file = Self.file(seconds: [:])
        file.notes = [
            PayloadNote(.trial, "byte-level trials skipped: the see-through delta is below 1/64 of the file"),
            PayloadNote(.notSeenThrough, "no see-through for 1 of 3 deflate streams (zlib does not reproduce them): 60% of its bytes seen through"),
            PayloadNote(.trial, "cross-file trial skipped: of 100 anchors of the file, 0 are only in the other files and 3 in none"),
            PayloadNote(.noDelta, "no delta: old file is empty"),
        ]
        #expect(
            file.edgeNote
                == "no see-through for 1 of 3 deflate streams (zlib does not reproduce them): 60% of its bytes seen through; no delta: old file is empty"
        )
        #expect(file.note?.components(separatedBy: "; ").count == 4 && file.note?.hasPrefix("byte-level trials skipped") == true)
        file.notes.removeAll { !$0.logOnly }
        #expect(file.edgeNote == nil && file.note != nil)
        file.notes = []
        #expect(file.note == nil)
    }
}
