import Foundation
import MapTestSupport
import Testing

@testable import MapPublisher

/// The anchors estimate that decides whether a large file gets a cross-file trial.
@Suite struct CrossFileEstimateTests {
    static func random(_ count: Int, _ generator: inout SeededGenerator) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    }

    @Test func contentOnlyAnotherFileHoldsKeepsTheTrialAndEditsOfTheBaseSkipIt() throws {
        let dir = TemporaryDirectory()
        var generator = SeededGenerator(seed: 7)
        let base = Self.random(1 << 20, &generator)
        let other = Self.random(1 << 20, &generator)
        var edited = base
        for change in 0..<10 {
            for offset in 0..<4_096 { edited[change * 100_000 + offset] = UInt8(truncatingIfNeeded: generator.next()) }
        }
        // Half of it from the other file: a cross-file delta matches what the base lacks.
        let repeated = Array(other[..<(512 << 10)]) + Array(base[..<(512 << 10)])
        for (name, bytes) in [("base", base), ("other", other), ("edited", edited), ("repeated", repeated)] {
            try Data(bytes).write(to: dir.path(name))
        }
        func estimate(_ name: String) throws -> CrossFileEstimate {
            try #require(CrossFileEstimate.of(newPath: dir.path(name).path, basePath: dir.path("base").path, otherPaths: [dir.path("other").path]))
        }
        let edits = try estimate("edited")
        #expect(edits.elsewhere == 0 && edits.novel > 0 && edits.rulesOutCrossTrial, "\(edits)")
        #expect(edits.note.hasPrefix("cross-file trial skipped: of \(edits.anchors) anchors"))
        let cut = try estimate("repeated")
        // About one anchor in 128 bytes (at least 64 apart): some 4,000 in each half.
        #expect(cut.elsewhere > 3_000 && cut.inBase > 3_000 && !cut.rulesOutCrossTrial, "\(cut)")
        #expect(cut.note.hasPrefix("cross-file trial run"))
        // Thinned above 64 MiB, so the sets stay bounded at any size.
        #expect(CrossFileEstimate.anchorBits(forFileOf: 64 << 20) == 6)
        #expect(CrossFileEstimate.anchorBits(forFileOf: 1 << 30) == 10)
    }

    /// Each reference is weighed by what it adds beside the base and the references kept
    /// before it: a byte-for-byte copy of a kept reference adds nothing; left out, a
    /// reference adds nothing for those after it, so its copy then counts in full.
    @Test func aReferenceAddsOnlyWhatTheBaseAndTheOnesKeptBeforeItLack() throws {
        let dir = TemporaryDirectory()
        var generator = SeededGenerator(seed: 8)
        let base = Self.random(1 << 20, &generator)
        let other = Self.random(1 << 20, &generator)
        let repeated = Array(other[..<(512 << 10)]) + Array(base[..<(512 << 10)])
        for (name, bytes) in [("base", base), ("other", other), ("copy", other), ("repeated", repeated)] {
            try Data(bytes).write(to: dir.path(name))
        }
        let paths = [dir.path("other").path, dir.path("copy").path]
        let kept = try #require(
            CrossFileEstimate.additions(newPath: dir.path("repeated").path, basePath: dir.path("base").path, otherPaths: paths) {
                added, _ in added > 0
            })
        #expect(kept.added[0] > 3_000 && kept.added[1] == 0 && kept.kept == [true, false], "\(kept)")
        let none = try #require(
            CrossFileEstimate.additions(newPath: dir.path("repeated").path, basePath: dir.path("base").path, otherPaths: paths) { _, _ in
                false
            })
        #expect(none.added[1] == none.added[0] && none.kept == [false, false], "\(none)")
    }
}
