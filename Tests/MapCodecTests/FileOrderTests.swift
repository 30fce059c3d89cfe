import Testing

@testable import MapPublisher

/// The order in which a patch's threads take its changed files (`Chosen.payloads`): the
/// largest first, so that the longest trials do not start last; equal sizes in tree order.
@Suite struct FileOrderTests {
    @Test func theLargestFileIsTakenFirstAndEqualSizesKeepTheirOrder() {
        // A gazetteer's four cuts in tree order: cities1000, cities15000, cities500, cities5000.
        #expect(Chosen.largestFirst([56_341_698, 15_185_453, 73_966_859, 26_905_497]) == [2, 0, 3, 1])
        #expect(Chosen.largestFirst([7, 9, 7, 9, 7]) == [1, 3, 0, 2, 4])
        #expect(Chosen.largestFirst([]) == [])
    }
}
