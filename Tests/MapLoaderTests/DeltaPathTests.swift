import Testing
@testable import MapLoader

extension DeltaTests {
    /// The path rules of the container.
    @Suite struct PathTests {
        @Test(arguments: ["a", "a/b/c.mvt", "tiles/1/2/3.mvt", ".hidden", "a/..b", "x..", "ünïcode/ñ"])
        func safePathsPass(path: String) {
            #expect(PatchPath.isSafe(path))
        }

        @Test(arguments: ["", "/a", "a\\b", "../a", "a/..", "a/../b", ".", "a/./b", "a//b", "a/", "a\u{0}",
                          String(repeating: "x", count: 256), String(repeating: "a/", count: 2100) + "a"])
        func unsafePathsFail(path: String) {
            #expect(!PatchPath.isSafe(path))
            #expect(throws: PatchError.unsafePath(path)) { try PatchPath.validate(path) }
        }
    }
}
