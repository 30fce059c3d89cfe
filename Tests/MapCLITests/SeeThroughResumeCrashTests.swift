import Foundation
import ManifestServer
import MapPlatform
import MapPublisher
import MapStore
import MapTestSupport
import Synchronization
import Testing

@testable import MapLoader

/// A real crash in the middle of rebuilding a large gzip file: the CLI is killed with
/// SIGKILL once it has checkpointed part of the rebuild; the next `update` takes over the
/// decoded expansion and the rebuilt bytes, and finishes the file.
@Suite(.serialized) struct SeeThroughResumeCrashTests {
    @Test func updateKilledWhileRebuildingAGzipFileResumesFromItsCheckpoint() async throws {
        let dir = TemporaryDirectory("see-through-crash")
        // 48 members: many streams, so the rebuild checkpoints between them. Killed once
        // the checkpoint records rebuilt bytes.
        let killed = try await KilledUpdate.run(
            in: dir, segmentLength: 256 << 10,
            write: { revision, folder in
                try LargeFixtures.writeGzip(
                    folder.appendingPathComponent("records.csv.gz"), megabytes: 16, members: 48, edits: revision == 1 ? 0 : 30)
            },
            killWhen: { names, resume in
                names.contains { name in
                    name.hasPrefix("apply-") && name.hasSuffix(".json")
                        && (try? String(contentsOf: resume.appendingPathComponent(name), encoding: .utf8))?.contains("rebuilt") == true
                }
            })
        let update = try #require(killed, "no attempt was killed in the middle of the rebuild")
        defer { update.server.stop() }
        let data = update.data
        let client = { (_: URL) in update.client }
        let partial = FileSystem.names(in: DataDirectory(data).resume.path)
        #expect(partial.contains { $0.hasSuffix(".partial") } && partial.contains { $0.hasSuffix(".expansion") }, "\(partial)")
        // The publisher sent this file's expansion whole, as one suffix delta (2.7 kB
        // against 8.1 kB segmented): its checkpoint vouches for the expansion by its digest.
        let checkpoints = partial.filter { $0.hasSuffix(".json") }.compactMap {
            try? String(contentsOf: DataDirectory(data).resume.appendingPathComponent($0), encoding: .utf8)
        }
        #expect(checkpoints.contains { $0.contains("expansionSHA256") }, "\(checkpoints)")

        let second = try await CLI.run(["update", "--delta", "--json", "--threads", "1"] + client(data))
        #expect(second.status == 0, "\(second.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any]
        let resumed = (report?["resumedBytes"] as? NSNumber)?.int64Value ?? 0
        let size = Int64(try Data(contentsOf: dir.path("r2/data/planet/base/records.csv.gz")).count)
        // The whole expansion and some rebuilt bytes were taken over.
        #expect(resumed > Int64(Double(size) * PatchRun.expansionShare), "resumed \(resumed) of \(size)")
        #expect(report?["toVersion"] as? String == "v2")
        let steps = report?["steps"] as? [[String: Any]] ?? []
        #expect(steps.contains { $0["method"] as? String != "full" && $0["action"] as? String != "keep" }, "\(steps)")
        #expect(
            try Data(contentsOf: data.appendingPathComponent("current/planet/base/records.csv.gz"))
                == Data(contentsOf: dir.path("r2/data/planet/base/records.csv.gz")))
        let verify = try await CLI.run(["verify"] + client(data))
        #expect(verify.status == 0, "\(verify.stderr)")
        let left = FileSystem.names(in: DataDirectory(data).resume.path)
        #expect(!left.contains { $0.hasPrefix("apply-") }, "\(left)")
    }
}
