import MapPublisher
import Testing

/// Which trials run for a file is a pure function of what was measured of it
/// (``TrialPolicy/holds(_:_:)``): each rule held to a table of facts on both sides of its
/// numbers, and every rule but those of sizes alone off without estimates.
@Suite struct TrialPolicyTests {
    /// One row: a rule, the facts measured, and whether the rule holds (leaves its trials out).
    struct Row: Sendable, CustomTestStringConvertible {
        let rule: TrialRule
        let facts: TrialFacts
        let holds: Bool
        var testDescription: String { "\(rule.rawValue): \(facts) -> \(holds)" }
    }

    static let mib: Int64 = 1 << 20

    static let rows: [Row] = [
        // The see-through delta is below 1/64 of the file, and is the one kept.
        Row(rule: .seeThroughSuffices, facts: TrialFacts(newSize: 6_400, seeThrough: 99, keptSeeThrough: true), holds: true),
        Row(rule: .seeThroughSuffices, facts: TrialFacts(newSize: 6_400, seeThrough: 100, keptSeeThrough: true), holds: false),
        Row(rule: .seeThroughSuffices, facts: TrialFacts(newSize: 6_400, seeThrough: 99, keptSeeThrough: false), holds: false),
        Row(rule: .seeThroughSuffices, facts: TrialFacts(newSize: 6_400), holds: false),
        // Over four times the see-through payload is new by the anchors, with 16 anchors or more.
        Row(
            rule: .compressedBytesAreNew,
            facts: TrialFacts(newSize: 10_000, seeThrough: 1_000, keptSeeThrough: true, anchors: 100, novelAnchors: 41), holds: true),
        Row(
            rule: .compressedBytesAreNew,
            facts: TrialFacts(newSize: 10_000, seeThrough: 1_000, keptSeeThrough: true, anchors: 100, novelAnchors: 40), holds: false),
        Row(
            rule: .compressedBytesAreNew,
            facts: TrialFacts(newSize: 10_000, seeThrough: 1_000, keptSeeThrough: true, anchors: 15, novelAnchors: 15), holds: false),
        Row(
            rule: .compressedBytesAreNew,
            facts: TrialFacts(newSize: 10_000, seeThrough: 1_000, keptSeeThrough: false, anchors: 100, novelAnchors: 100),
            holds: false),
        // Both sides at most 1 MiB.
        Row(rule: .smallPair, facts: TrialFacts(newSize: mib, oldSize: mib), holds: true),
        Row(rule: .smallPair, facts: TrialFacts(newSize: mib + 1, oldSize: 10), holds: false),
        Row(rule: .smallPair, facts: TrialFacts(newSize: 10, oldSize: mib + 1), holds: false),
        // Either side over 8 MiB.
        Row(rule: .deepSearchAlone, facts: TrialFacts(newSize: 8 * mib + 1, oldSize: 0), holds: true),
        Row(rule: .deepSearchAlone, facts: TrialFacts(newSize: 1, oldSize: 8 * mib + 1), holds: true),
        Row(rule: .deepSearchAlone, facts: TrialFacts(newSize: 8 * mib, oldSize: 8 * mib), holds: false),
        // A rival at most 55% of the fast delta.
        Row(rule: .rivalFarBelowFastDelta, facts: TrialFacts(newSize: 0, rival: 55, fastDelta: 100), holds: true),
        Row(rule: .rivalFarBelowFastDelta, facts: TrialFacts(newSize: 0, rival: 56, fastDelta: 100), holds: false),
        Row(rule: .rivalFarBelowFastDelta, facts: TrialFacts(newSize: 0, rival: 1), holds: false),
        // The CLI's delta over a fifth above the rival.
        Row(rule: .variantsOutOfReach, facts: TrialFacts(newSize: 0, delta: 1_000, rival: 799), holds: true),
        Row(rule: .variantsOutOfReach, facts: TrialFacts(newSize: 0, delta: 1_000, rival: 800), holds: false),
        // A delta at most 1/64 of the file: a rule of sizes, with or without estimates.
        Row(rule: .deltaFarBelowFile, facts: TrialFacts(newSize: 6_400, delta: 100), holds: true),
        Row(rule: .deltaFarBelowFile, facts: TrialFacts(newSize: 6_400, delta: 101), holds: false),
        // Samples over twice the delta, for a file over 8 MiB.
        Row(rule: .plainZstdEstimate, facts: TrialFacts(newSize: 8 * mib + 1, delta: 100, plainZstdEstimate: 201), holds: true),
        Row(rule: .plainZstdEstimate, facts: TrialFacts(newSize: 8 * mib + 1, delta: 100, plainZstdEstimate: 200), holds: false),
        Row(rule: .plainZstdEstimate, facts: TrialFacts(newSize: 8 * mib, delta: 100, plainZstdEstimate: 10_000), holds: false),
        // Over 8 MiB, at any size.
        Row(rule: .crossFrameFirst, facts: TrialFacts(newSize: 8 * mib + 1), holds: true),
        Row(rule: .crossFrameFirst, facts: TrialFacts(newSize: 8 * mib), holds: false),
        Row(rule: .crossFrameFirst, facts: TrialFacts(newSize: 256 * mib), holds: true),
        // Over 1 MiB.
        Row(rule: .crossEstimate, facts: TrialFacts(newSize: mib + 1), holds: true),
        Row(rule: .crossEstimate, facts: TrialFacts(newSize: mib), holds: false),
        // A reference of a file over 16 MiB adding under 1/1024 of its anchors.
        Row(rule: .redundantReference, facts: TrialFacts(newSize: 16 * mib + 1, anchors: 102_400, addedAnchors: 99), holds: true),
        Row(rule: .redundantReference, facts: TrialFacts(newSize: 16 * mib + 1, anchors: 102_400, addedAnchors: 100), holds: false),
        Row(rule: .redundantReference, facts: TrialFacts(newSize: 16 * mib, anchors: 102_400, addedAnchors: 0), holds: false),
        Row(rule: .redundantReference, facts: TrialFacts(newSize: 16 * mib + 1, anchors: 15, addedAnchors: 0), holds: false),
        // What the base lacks and the references hold, over 64 times the frame.
        Row(
            rule: .baseLacksWhatTheFrameMatched, facts: TrialFacts(newSize: 64_000, anchors: 1_000, rival: 10, addedAnchors: 11),
            holds: true),
        Row(
            rule: .baseLacksWhatTheFrameMatched, facts: TrialFacts(newSize: 64_000, anchors: 1_000, rival: 10, addedAnchors: 10),
            holds: false),
        Row(rule: .baseLacksWhatTheFrameMatched, facts: TrialFacts(newSize: 64_000, anchors: 1_000, addedAnchors: 1_000), holds: false),
        // The see-through payload kept.
        Row(rule: .noCrossAfterSeeThrough, facts: TrialFacts(newSize: 1, keptSeeThrough: true), holds: true),
        Row(rule: .noCrossAfterSeeThrough, facts: TrialFacts(newSize: 1, keptSeeThrough: false), holds: false),
    ]

    @Test(arguments: rows) func eachRuleOnBothSidesOfItsNumbers(_ row: Row) {
        #expect(TrialPolicy(estimates: true).holds(row.rule, row.facts) == row.holds)
        // Without estimates only a rule of sizes still holds.
        #expect(TrialPolicy(estimates: false).holds(row.rule, row.facts) == (row.holds && !row.rule.byEstimate))
    }

    /// Every rule is in the table on both sides, and says what it leaves out and why.
    @Test func everyRuleIsTabledWithItsReason() {
        for rule in TrialRule.allCases {
            #expect(Self.rows.contains { $0.rule == rule && $0.holds }, "\(rule) never holds in the table")
            #expect(Self.rows.contains { $0.rule == rule && !$0.holds }, "\(rule) always holds in the table")
            #expect(!rule.leavesOut.isEmpty && rule.reason.count > 40)
        }
        #expect(TrialRule.allCases.filter { !$0.byEstimate } == [.deltaFarBelowFile], "only the rules of sizes alone hold without estimates")
    }
}
