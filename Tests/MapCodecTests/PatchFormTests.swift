import Foundation
import Testing
import MapTestSupport
@testable import MapLoader
import MapDelta
import MapModel
import MapPlatform
import MapPublisher

extension DeltaTests {
    /// The two manifest forms (``PatchFormat``): the publisher writes form 2, whose kept files
    /// cost no digest; a form-1 container (every digest written) still applies.
    @Suite struct PatchFormTests {
        /// The header's compressed and raw manifest lengths and the payload bytes of `patch`.
        private func parts(of patch: URL) throws -> (compressed: Int, raw: Int, payloads: [UInt8]) {
            let bytes = try [UInt8](Data(contentsOf: patch))
            func u32(_ at: Int) -> Int { (0..<4).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
            let compressed = u32(8)
            return (compressed, u32(12), Array(bytes[(PatchFormat.headerSize + compressed)...]))
        }

        /// `manifest` with every digest filled in from the trees, as form 1 has them.
        private func withAllDigests(_ manifest: PatchManifest, old: URL, new: URL) throws -> PatchManifest {
            var full = manifest
            for index in full.sources.indices {
                full.sources[index].sha256 = try FileHashing.hash(ofFile: old.path + "/" + full.sources[index].path).hash
            }
            for index in full.targets.indices {
                full.targets[index].sha256 = try FileHashing.hash(ofFile: new.path + "/" + full.targets[index].path).hash
            }
            full.treeHash = nil
            return full
        }

        @Test func aFormOnePatchStillApplies() throws {
            let release = SampleRelease()
            let patch = release.directory.path("p2")
            _ = try PatchBuilder.build(from: release.old, to: release.new, output: patch, options: PatchOptions(level: 3))
            #expect(try [UInt8](Data(contentsOf: patch)).starts(with: Array("MLPATCH2".utf8)))
            let manifest = try PatchContainer.manifest(at: patch)
            #expect(manifest.treeHash != nil)
            let full = try withAllDigests(manifest, old: release.old, new: release.new)
            let raw = PatchManifestEncoder.encode(full, form: 1)
            let compressed = try PatchContainerWriter.compressManifest(raw, level: 3)
            let spool = release.directory.path("payloads")
            try Data(try parts(of: patch).payloads).write(to: spool)
            let formOne = release.directory.path("p1")
            try PatchContainerWriter.write(rawManifestCount: raw.count, compressedManifest: compressed, payloads: spool.path, to: formOne)
            // write() puts the current magic first: this container is form 1.
            var bytes = try [UInt8](Data(contentsOf: formOne))
            bytes.replaceSubrange(0..<8, with: PatchFormat.magic(form: 1))
            try Data(bytes).write(to: formOne)

            let reread = try PatchContainer.manifest(at: formOne)
            #expect(reread.treeHash == nil && reread.targets.allSatisfy { $0.sha256 != nil })
            let out = release.directory.path("out1")
            let files = try PatchApplier.apply(patch: formOne, oldTree: release.old, into: out)
            #expect(Trees.contents(of: out) == Trees.contents(of: release.new))
            let lean = try PatchApplier.apply(patch: patch, oldTree: release.old, into: release.directory.path("out2"))
            #expect(files == lean)
        }

        @Test func keptFilesCostNoDigestInFormTwo() throws {
            let dir = TemporaryDirectory("form2")
            let kept = 300
            for tree in ["old", "new"] {
                for index in 0..<kept { Trees.write(Array("tile \(index)\n".utf8), "tiles/\(index).mvt", in: dir.path(tree)) }
            }
            Trees.write(Array("v1\n".utf8), "meta.txt", in: dir.path("old"))
            Trees.write(Array("v2\n".utf8), "meta.txt", in: dir.path("new"))
            let patch = dir.path("p")
            _ = try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: patch, options: PatchOptions(level: 3))
            let manifest = try PatchContainer.manifest(at: patch)
            let formOne = PatchManifestEncoder.encode(try withAllDigests(manifest, old: dir.path("old"), new: dir.path("new")), form: 1)
            let (compressed, raw, _) = try parts(of: patch)
            #expect(raw <= formOne.count - kept * 32 + 32)
            let formOneCompressed = try PatchContainerWriter.compressManifest(formOne, level: 19).count
            #expect(compressed < formOneCompressed - kept * 24)
            let out = dir.path("out")
            _ = try PatchApplier.apply(patch: patch, oldTree: dir.path("old"), into: out)
            #expect(Trees.contents(of: out) == Trees.contents(of: dir.path("new")))
        }

        /// One changed file and nothing kept: the tree hash would cost what form 2 saves, so
        /// the builder keeps form 1 and the patch does not grow.
        @Test func oneChangedFileKeepsFormOne() throws {
            let dir = TemporaryDirectory("form1")
            Trees.write(Array(repeating: 7, count: 5_000), "roads.bin", in: dir.path("old"))
            Trees.write(Array(repeating: 7, count: 4_000) + Array(repeating: 9, count: 1_000), "roads.bin", in: dir.path("new"))
            let patch = dir.path("p")
            let stats = try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: patch, options: PatchOptions(level: 3))
            #expect(stats.manifestForm == 1)
            #expect(try [UInt8](Data(contentsOf: patch)).starts(with: PatchFormat.magic(form: 1)))
            let manifest = try PatchContainer.manifest(at: patch)
            let formTwo = PatchManifestEncoder.encode(manifest, form: 2)
            let formTwoCompressed = try PatchContainerWriter.compressManifest(formTwo, level: 19).count
            #expect(Int(stats.manifestBytes) <= formTwoCompressed)
            let out = dir.path("out")
            _ = try PatchApplier.apply(patch: patch, oldTree: dir.path("old"), into: out)
            #expect(Trees.contents(of: out) == Trees.contents(of: dir.path("new")))
        }
    }
}
