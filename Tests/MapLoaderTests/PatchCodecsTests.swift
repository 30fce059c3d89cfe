import Foundation
import MapModel
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// The optional codecs a patch needs travel with its edge in the signed manifest, so a
/// client built without one (an app build without liblzma) plans around it; a publisher
/// can make patches every build applies.
@Suite struct PatchCodecsTests {
    static func edges(_ manifest: Manifest) -> [PatchEdge] {
        manifest.root.leaves.flatMap { ($0.artifacts ?? [:]).values.flatMap { $0.patches ?? [] } }
    }

    @Test func aSiteSaysWhichPatchesNeedLZMA2AndCanMakeNone() async throws {
        let site = try TestSite(revisions: [1])
        let loader = site.loader()
        try await loader.install(["germany"])

        // v2 without LZMA2: no edge names a codec, and the update still goes by patches.
        try ReleaseBuilder.make(at: site.dir.path("r2"), revision: 2)
        var options = PublishOptions(version: "v2", level: 3, validity: 3600, keyFile: site.dir.path("publisher.key"))
        options.lzma = false
        try Publisher.publish(release: site.dir.path("r2"), site: site.site, options: options)
        let plain = Self.edges(try site.manifest("v2"))
        #expect(!plain.isEmpty && plain.allSatisfy { $0.codecs == nil }, "\(plain.map(\.codecs))")
        let check = try await loader.checkForUpdate()
        #expect(check.plan.steps.contains { $0.method == .delta })
        try await loader.performUpdate()
        #expect(try await loader.verify().problems.isEmpty)

        // v3 as published by default: the sample's small files win with LZMA2, and the
        // edges that carry it say so.
        try site.publish(3)
        let edges = Self.edges(try site.manifest("v3"))
        #expect(edges.contains { $0.codecs == ["lzma"] }, "\(edges.map(\.codecs))")
        #expect(edges.allSatisfy { $0.codecs == nil || $0.codecs == ["lzma"] })
    }
}
