import Foundation
import MapDelta
import MapPlatform
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

extension DeltaTests {
    /// PatchBuilder → PatchApplier on a generated release with every kind of change.
    @Suite struct RoundTripTests {
        @Test func resultTreeEqualsTargetByteForByte() throws {
            let release = SampleRelease()
            let patch = release.directory.path("p.mlpatch")
            let stats = try PatchBuilder.build(
                from: release.old, to: release.new, output: patch,
                options: PatchOptions(level: 3))
            let out = release.directory.path("out")
            let files = try PatchApplier.apply(patch: patch, oldTree: release.old, into: out)

            #expect(files == (try FileTree.entries(in: release.new)))
            #expect(TreeHash.of(files) == TreeHash.of(try FileTree.entries(in: out)))
            let expected = Trees.contents(of: release.new)
            let produced = Trees.contents(of: out)
            #expect(produced.keys.sorted() == expected.keys.sorted())
            for (path, bytes) in expected { #expect(produced[path] == bytes, "\(path) differs") }
            #expect(stats.count(.delete) > 0 && stats.count(.copy) == 3 && stats.count(.patch) > 0)
            #expect(stats.patchBytes < stats.targetBytes / 20, "patch \(stats.patchBytes) of \(stats.targetBytes)")
        }

        @Test func unchangedAndCopiedFilesAreHardLinksIntoTheOldTree() throws {
            let release = SampleRelease()
            let patch = release.directory.path("p.mlpatch")
            _ = try PatchBuilder.build(from: release.old, to: release.new, output: patch, options: PatchOptions(level: 3))
            let out = release.directory.path("out")
            try PatchApplier.apply(patch: patch, oldTree: release.old, into: out)

            for path in SampleRelease.unchanged {
                let inode = try #require(Trees.inode(out.appendingPathComponent(path)))
                #expect(inode == Trees.inode(release.old.appendingPathComponent(path)), "\(path)")
            }
            for (newPath, oldPath) in SampleRelease.copies {
                let inode = try #require(Trees.inode(out.appendingPathComponent(newPath)))
                #expect(inode == Trees.inode(release.old.appendingPathComponent(oldPath)), "\(newPath)")
            }
            #expect(Trees.inode(out.appendingPathComponent("roads.bin")) != Trees.inode(release.old.appendingPathComponent("roads.bin")))
        }

        @Test func operationsAndEncodingsAreRecordedPerFile() throws {
            let release = SampleRelease()
            let patch = release.directory.path("p.mlpatch")
            let stats = try PatchBuilder.build(from: release.old, to: release.new, output: patch, options: PatchOptions(level: 3))
            let manifest = try PatchContainer.manifest(at: patch)
            func target(_ path: String) -> PatchManifest.Target? { manifest.targets.first { $0.path == path } }

            // Edited in place: a delta against the same path (zstd's or LZMA2's).
            guard case .patch(let roadsBase, let roadsPayload)? = target("roads.bin")?.origin else {
                Issue.record("roads.bin is not a patch")
                return
            }
            #expect(manifest.sources[roadsBase].path == "roads.bin" && [.delta, .lzmaDelta].contains(roadsPayload.encoding))
            // Renamed and edited: a delta against the most similar old file.
            guard case .patch(let indexBase, _)? = target("index/v2.idx")?.origin else {
                Issue.record("index/v2.idx is not a patch")
                return
            }
            #expect(manifest.sources[indexBase].path == "index/v1.idx")
            #expect(stats.file("index/v2.idx")?.source == "index/v1.idx")
            // New content: incompressible bytes are stored, text is zstd.
            #expect(target("added/random.bin")?.origin.payload?.encoding == .stored)
            #expect(target("added/notes.txt")?.origin.payload?.encoding == .zstd)
            #expect(stats.file("added/notes.txt")?.encoding == .zstd)
            // A tiny changed file whose delta is bigger than its bytes is stored, and says why.
            #expect(target("meta/version.txt")?.origin.payload?.encoding == .stored)
            #expect(stats.file("meta/version.txt")?.note?.contains("not smaller") == true)
            // Moves and duplicates carry no payload.
            guard case .copy(let moved)? = target("tiles/moved/0-1-1.mvt")?.origin else {
                Issue.record("moved tile is not a copy")
                return
            }
            #expect(manifest.sources[moved].path == "tiles/0/1/1.mvt")
            // Kept as it is: not listed (form 3), the old tree's file taken over.
            #expect(target("docs/readme.txt") == nil)
            let kept = try PatchManifestDecoder.keepingUnlisted(manifest, oldFiles: FileTree.files(in: release.old))
            #expect(kept.targets.first { $0.path == "docs/readme.txt" }?.origin == .unchanged)
            #expect(manifest.deletions.contains("retired/gone.bin"))
            // Stats and container agree on every payload.
            for file in stats.files where file.encoding != nil {
                #expect(target(file.path)?.origin.payload?.encoding == file.encoding, "\(file.path)")
                #expect(target(file.path)?.origin.payload?.length == file.payloadBytes, "\(file.path)")
                #expect(file.payloadBytes == file.tried.values.min(), "\(file.path) did not keep the smallest")
            }
        }

        @Test func defaultLevelBeatsPlainZstdOnEditedRecords() throws {
            let dir = TemporaryDirectory()
            let records = Records.make(count: 4000, seed: 9)
            Trees.write(records.flatMap { $0 }, "r.bin", in: dir.path("old"))
            Trees.write(Records.mutate(records, fraction: 0.02, seed: 10).flatMap { $0 }, "r.bin", in: dir.path("new"))
            let stats = try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path("p"))
            let file = try #require(stats.file("r.bin"))
            #expect(file.encoding == .delta)
            let plain = try ZstdDelta.encode(new: dir.path("new/r.bin"), old: nil, to: dir.path("plain.zst"))
            #expect(file.payloadBytes * 20 < plain, "delta \(file.payloadBytes) vs zstd \(plain)")
            try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out"))
            #expect(Trees.contents(of: dir.path("out")) == Trees.contents(of: dir.path("new")))
        }

        @Test func progressReachesTheTargetSize() throws {
            let release = SampleRelease()
            let patch = release.directory.path("p.mlpatch")
            let stats = try PatchBuilder.build(from: release.old, to: release.new, output: patch, options: PatchOptions(level: 3))
            var reports: [Int64] = []
            try PatchApplier.apply(patch: patch, oldTree: release.old, into: release.directory.path("out")) { reports.append($0) }
            #expect(reports.last == stats.targetBytes)
            #expect(reports == reports.sorted())
        }

        @Test func identicalTreesGiveAPatchWithoutPayloads() throws {
            let release = SampleRelease()
            let patch = release.directory.path("p.mlpatch")
            let stats = try PatchBuilder.build(from: release.old, to: release.old, output: patch)
            #expect(stats.payloadBytes == 0 && stats.count(.unchanged) == stats.files.count)
            try PatchApplier.apply(patch: patch, oldTree: release.old, into: release.directory.path("out"))
            #expect(Trees.contents(of: release.directory.path("out")) == Trees.contents(of: release.old))
        }
    }
}
