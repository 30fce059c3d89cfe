import Foundation
import MapTestSupport
import Testing

@testable import MapLoader

/// What a signed manifest may say, as tables: hashes that name files are hashes, and a
/// group's patches are few enough to plan through.
@Suite struct ManifestValidationTests {
    static let hex = String(repeating: "ab", count: 32)

    static func edge(_ from: Int, _ to: Int, size: Int64 = 1) -> PatchEdge {
        PatchEdge(
            from: "v\(from)", to: "v\(to)", sha256: hex, size: size, fromTreeHash: tree(from), toTreeHash: tree(to))
    }

    /// The tree hash of version `n`: 64 hex digits.
    static func tree(_ n: Int) -> String {
        let digits = String(n, radix: 16)
        return String(repeating: "0", count: 64 - digits.count) + digits
    }

    static func manifest(sha256: String = hex, treeHash: String = tree(0), patches: [PatchEdge] = []) -> Manifest {
        let artifact = Artifact(
            sha256: sha256, size: 10, format: .tarZstd, unpackedSize: 30, files: 1, treeHash: treeHash, patches: patches)
        return Manifest(
            version: "v2", groups: [DataGroup(id: "base", title: "Base", required: true, default: true)],
            root: PackageNode(id: "world", title: "World", children: [PackageNode(id: "a", title: "A", artifacts: ["base": artifact])]))
    }

    @Test(arguments: [
        String(repeating: "./", count: 24) + "../../victim.txt", String(repeating: "A", count: 64),
        String(repeating: "g", count: 64), String(repeating: "a", count: 63),
    ])
    func aHashThatIsNotSixtyFourLowercaseHexDigitsIsRefused(_ hash: String) {
        #expect(ManifestValidation.problem(in: Self.manifest(sha256: hash))?.contains("malformed hashes") == true)
        #expect(ManifestValidation.problem(in: Self.manifest(treeHash: hash))?.contains("malformed hashes") == true)
        var edge = Self.edge(1, 0)
        edge.sha256 = hash
        #expect(ManifestValidation.problem(in: Self.manifest(patches: [edge]))?.contains("malformed hashes") == true)
        edge = Self.edge(1, 0)
        edge.fromTreeHash = hash
        #expect(ManifestValidation.problem(in: Self.manifest(patches: [edge]))?.contains("malformed hashes") == true)
    }

    @Test func aGroupMayListUpToTheLimitOfPatches() {
        let limit = SiteLimits.patchesPerArtifact
        let chain = (1...limit).map { Self.edge($0, $0 - 1) }
        #expect(ManifestValidation.problem(in: Self.manifest(patches: chain)) == nil)
        let more = chain + [Self.edge(limit + 1, limit)]
        #expect(ManifestValidation.problem(in: Self.manifest(patches: more))?.contains("more than \(limit)") == true)
    }

    /// The cheapest chain through a long line of patches is every one of them, in order;
    /// a cheaper shortcut wins.
    @Test func theCheapestChainThroughALongLineOfPatches() throws {
        let limit = SiteLimits.patchesPerArtifact
        let line = (1...limit).map { Self.edge($0 - 1, $0) }
        let chain = try #require(Planner.cheapestChain(from: Self.tree(0), to: Self.tree(limit), edges: line.reversed()))
        #expect(chain.map(\.to) == line.map(\.to))
        let shortcut = Self.edge(1, limit, size: 5)
        let cheaper = try #require(Planner.cheapestChain(from: Self.tree(0), to: Self.tree(limit), edges: line + [shortcut]))
        #expect(cheaper.map(\.to) == ["v1", "v\(limit)"])
        #expect(Planner.cheapestChain(from: Self.tree(limit), to: Self.tree(0), edges: line) == nil, "no way back")
        #expect(Planner.cheapestChain(from: Self.tree(0), to: Self.tree(0), edges: line) == nil, "nothing to do")
    }
}
