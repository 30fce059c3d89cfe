import MapTestSupport
import Testing

@testable import MapLoader

extension DeltaTests {
    /// The path rules of the container.
    @Suite struct PathTests {
        @Test(arguments: ["a", "a/b/c.mvt", "tiles/1/2/3.mvt", ".hidden", "a/..b", "x..", "ünïcode/ñ"])
        func safePathsPass(path: String) {
            #expect(PatchPath.isSafe(path))
        }

        /// A path under test, shown by a short name (a 4,201-character argument would flood
        /// the test log).
        struct UnsafePath: Sendable, CustomTestStringConvertible {
            let path: String
            let testDescription: String
            init(_ path: String, named name: String? = nil) {
                self.path = path
                testDescription = name ?? "\"\(path.replacingOccurrences(of: "\u{0}", with: "\\0"))\""
            }
        }

        @Test(arguments: [
            UnsafePath(""), UnsafePath("/a"), UnsafePath("a\\b"), UnsafePath("../a"), UnsafePath("a/.."),
            UnsafePath("a/../b"), UnsafePath("."), UnsafePath("a/./b"), UnsafePath("a//b"), UnsafePath("a/"),
            UnsafePath("a\u{0}"), UnsafePath(String(repeating: "x", count: 256), named: "a 256-byte name"),
            UnsafePath(String(repeating: "a/", count: 2100) + "a", named: "a 4,201-byte path"),
        ])
        func unsafePathsFail(_ unsafe: UnsafePath) {
            let path = unsafe.path
            #expect(!PatchPath.isSafe(path))
            #expect(throws: PatchError.unsafePath(path)) { try PatchPath.validate(path) }
        }
    }
}
