import Foundation
import ManifestServer
import MapPlatform
import MapPublisher
import MapStore
import MapTestSupport
import Testing

@testable import MapLoader

/// A real crash in the middle of a large file's apply: the CLI is killed with SIGKILL once
/// it has checkpointed a segment; the next `update` continues from the checkpoint.
@Suite(.serialized) struct SegmentedResumeCrashTests {
    @Test func updateKilledInTheMiddleOfALargeFileResumesFromItsLastSegment() async throws {
        let dir = TemporaryDirectory("segmented-crash")
        // ~390 segments, each checkpointed with an fsync; killed once one is.
        let killed = try await KilledUpdate.run(
            in: dir, segmentLength: 64 << 10,
            write: { revision, folder in
                if revision == 1 {
                    try LargeFixtures.writePair(
                        old: folder.appendingPathComponent("planet.bin"), new: dir.path("r2/data/planet/base/planet.bin"),
                        size: 24 << 20)
                }
            },
            killWhen: { names, _ in names.contains { $0.hasPrefix("apply-") && $0.hasSuffix(".json") } })
        let update = try #require(killed, "no attempt was killed in the middle of the apply")
        defer { update.server.stop() }
        let data = update.data
        let client = { (_: URL) in update.client }
        let partial = FileSystem.names(in: DataDirectory(data).resume.path)
        #expect(partial.contains { $0.hasSuffix(".partial") })

        // The next run resumes: it reports the bytes taken over, and the result is v2's file.
        let second = try await CLI.run(["update", "--delta", "--json"] + client(data))
        #expect(second.status == 0, "\(second.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any]
        let resumed = (report?["resumedBytes"] as? NSNumber)?.int64Value ?? 0
        #expect(resumed > 0, "\(second.stdout)")
        #expect(report?["toVersion"] as? String == "v2")
        #expect(
            try Data(contentsOf: data.appendingPathComponent("current/planet/base/planet.bin"))
                == Data(contentsOf: dir.path("r2/data/planet/base/planet.bin")))
        let verify = try await CLI.run(["verify"] + client(data))
        #expect(verify.status == 0, "\(verify.stderr)")
        let left = FileSystem.names(in: DataDirectory(data).resume.path)
        #expect(!left.contains { $0.hasPrefix("apply-") }, "\(left)")
    }
}
