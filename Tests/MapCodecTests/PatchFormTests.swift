import Foundation
import MapDelta
import MapModel
import MapPlatform
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

extension DeltaTests {
    /// The three manifest forms (``PatchFormat``): the publisher writes form 3, which lists
    /// neither kept files nor the digests of small written files; containers of forms 1 and
    /// 2 (every target listed) still apply.
    @Suite struct PatchFormTests {
        /// The header's compressed and raw manifest lengths and the payload bytes of `patch`.
        private func parts(of patch: URL) throws -> (compressed: Int, raw: Int, payloads: [UInt8]) {
            let bytes = try [UInt8](Data(contentsOf: patch))
            func u32(_ at: Int) -> Int { (0..<4).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
            let compressed = u32(8)
            return (compressed, u32(12), Array(bytes[(PatchFormat.headerSize + compressed)...]))
        }

        /// The manifest of `patch` with every target listed (form 3's kept files added from
        /// `old`) and every written file's digest, as form 2 has them; for form 1 (`allDigests`)
        /// every digest, filled in from the trees.
        private func listed(_ patch: URL, old: URL, new: URL, allDigests: Bool) throws -> PatchManifest {
            var full = try PatchManifestDecoder.keepingUnlisted(PatchContainer.manifest(at: patch), oldFiles: FileTree.files(in: old))
            for index in full.targets.indices where allDigests || full.targets[index].origin.payload != nil {
                full.targets[index].sha256 = try FileHashing.hash(ofFile: new.path + "/" + full.targets[index].path).hash
            }
            guard allDigests else { return full }
            for index in full.sources.indices {
                full.sources[index].sha256 = try FileHashing.hash(ofFile: old.path + "/" + full.sources[index].path).hash
            }
            full.treeHash = nil
            return full
        }

        /// `manifest` in form `form` with the payloads of `patch`, as a container at `url`.
        private func rewrite(_ patch: URL, as manifest: PatchManifest, form: Int, to url: URL, in dir: URL) throws {
            let raw = PatchManifestEncoder.encode(manifest, form: form)
            let compressed = try PatchContainerWriter.compressManifest(raw, level: 3)
            let spool = dir.appendingPathComponent("payloads")
            try Data(try parts(of: patch).payloads).write(to: spool)
            try PatchContainerWriter.write(
                rawManifestCount: raw.count, compressedManifest: compressed, payloads: spool.path, to: url, form: form)
        }

        @Test func formsOneAndTwoStillApply() throws {
            let release = SampleRelease()
            let patch = release.directory.path("p3")
            _ = try PatchBuilder.build(from: release.old, to: release.new, output: patch, options: PatchOptions(level: 3))
            #expect(try [UInt8](Data(contentsOf: patch)).starts(with: Array("MLPATCH3".utf8)))
            let manifest = try PatchContainer.manifest(at: patch)
            #expect(manifest.treeHash != nil && manifest.keepsUnlisted)
            #expect(manifest.targets.allSatisfy { $0.origin != .unchanged })
            #expect(manifest.targets.contains { $0.sha256 == nil && $0.origin.payload != nil })
            let current = try PatchApplier.apply(patch: patch, oldTree: release.old, into: release.directory.path("out3"))
            #expect(Trees.contents(of: release.directory.path("out3")) == Trees.contents(of: release.new))
            for form in [1, 2] {
                let older = release.directory.path("p\(form)")
                let full = try listed(patch, old: release.old, new: release.new, allDigests: form == 1)
                try rewrite(patch, as: full, form: form, to: older, in: release.directory.url)
                let reread = try PatchContainer.manifest(at: older)
                #expect(!reread.keepsUnlisted && reread.targets.count == current.count)
                if form == 1 { #expect(reread.treeHash == nil && reread.targets.allSatisfy { $0.sha256 != nil }) }
                let out = release.directory.path("out\(form)")
                let files = try PatchApplier.apply(patch: older, oldTree: release.old, into: out)
                #expect(Trees.contents(of: out) == Trees.contents(of: release.new))
                #expect(files == current)
            }
        }

        @Test func keptFilesAreNotListedInFormThree() throws {
            let dir = TemporaryDirectory("form3")
            let kept = 300
            for tree in ["old", "new"] {
                for index in 0..<kept { Trees.write(Array("tile \(index)\n".utf8), "tiles/\(index).mvt", in: dir.path(tree)) }
            }
            Trees.write(Array("v1\n".utf8), "meta.txt", in: dir.path("old"))
            Trees.write(Array("v2\n".utf8), "meta.txt", in: dir.path("new"))
            let patch = dir.path("p")
            let stats = try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: patch, options: PatchOptions(level: 3))
            #expect(stats.manifestForm == 3)
            let (compressed, raw, _) = try parts(of: patch)
            // The tree hash, one source and one target: no path of a kept tile.
            #expect(raw < 64, "form 3 manifest of \(raw) bytes")
            let formTwo = PatchManifestEncoder.encode(try listed(patch, old: dir.path("old"), new: dir.path("new"), allDigests: false), form: 2)
            #expect(compressed * 4 < (try PatchContainerWriter.compressManifest(formTwo, level: 19).count))
            let out = dir.path("out")
            let files = try PatchApplier.apply(patch: patch, oldTree: dir.path("old"), into: out)
            #expect(files.count == kept + 1)
            #expect(Trees.contents(of: out) == Trees.contents(of: dir.path("new")))
        }

        /// One changed file and nothing kept: the publisher writes whichever form comes out
        /// smallest, so no patch grows from a form.
        @Test func oneChangedFileGetsTheSmallestForm() throws {
            let dir = TemporaryDirectory("form1")
            Trees.write(Array(repeating: 7, count: 5_000), "roads.bin", in: dir.path("old"))
            Trees.write(Array(repeating: 7, count: 4_000) + Array(repeating: 9, count: 1_000), "roads.bin", in: dir.path("new"))
            let patch = dir.path("p")
            let stats = try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: patch, options: PatchOptions(level: 3))
            #expect(try [UInt8](Data(contentsOf: patch)).starts(with: PatchFormat.magic(form: stats.manifestForm)))
            for form in PatchFormat.forms {
                let full = try listed(patch, old: dir.path("old"), new: dir.path("new"), allDigests: form == 1)
                let other = try PatchContainerWriter.compressManifest(PatchManifestEncoder.encode(full, form: form), level: 19).count
                #expect(Int(stats.manifestBytes) <= other, "form \(stats.manifestForm) against form \(form)")
            }
            let out = dir.path("out")
            _ = try PatchApplier.apply(patch: patch, oldTree: dir.path("old"), into: out)
            #expect(Trees.contents(of: out) == Trees.contents(of: dir.path("new")))
        }

        @Test func aFormThreeManifestThatBreaksItsRulesIsRefused() throws {
            let zero = SHA256Hash(bytes: [UInt8](repeating: 0, count: 32))!
            func add(_ path: String, size: Int64, _ encoding: PatchEncoding = .zstd, digest: SHA256Hash? = nil) -> PatchManifest.Target {
                .init(path: path, size: size, sha256: digest, origin: .add(.init(encoding: encoding, length: 10)))
            }
            func decoded(_ targets: [PatchManifest.Target]) throws -> PatchManifest {
                let raw = PatchManifestEncoder.encode(PatchManifest(sources: [], targets: targets, deletions: [], treeHash: zero), form: 3)
                return try PatchManifestDecoder.decode(raw, form: 3, payloadStart: 0, containerSize: Int64(10 * targets.count))
            }
            #expect(try decoded([add("a.mvt", size: 5), add("b.mvt", size: 5)]).keepsUnlisted)
            // Out of path order: cross-file references would count other files.
            #expect(throws: PatchError.self) { try decoded([add("b.mvt", size: 5), add("a.mvt", size: 5)]) }
            // No digest for a large file, or for one whose payload has resume checkpoints.
            #expect(throws: PatchError.self) { try decoded([add("a.bin", size: PatchFormat.sourceDigestFrom)]) }
            #expect(throws: PatchError.self) { try decoded([add("a.gz", size: 5, .segmentedDeflateDelta)]) }
            #expect(try decoded([add("a.bin", size: PatchFormat.sourceDigestFrom, digest: zero)]).targets.count == 1)
            // A kept file listed (kind 0) is not form 3.
            var raw = [1] + zero.bytes + [0, 1, 1, UInt8(ascii: "a"), 1, PatchFormat.kindUnchanged, 0]
            #expect(throws: PatchError.self) { try PatchManifestDecoder.decode(raw, form: 3, payloadStart: 0, containerSize: 0) }
            raw = [0, 0, 0, 0]  // no tree hash (the caller gives it), no source, target or deletion
            #expect(try PatchManifestDecoder.decode(raw, form: 3, payloadStart: 0, containerSize: 0).targets.isEmpty)
            // A kept old file that a new target would have to lie below.
            let manifest = try decoded([add("a/b.mvt", size: 5)])
            #expect(throws: PatchError.self) { try PatchManifestDecoder.keepingUnlisted(manifest, oldFiles: [("a", 3)]) }
            let kept = try PatchManifestDecoder.keepingUnlisted(manifest, oldFiles: [("a0", 3), ("B", 1)])
            #expect(kept.targets.map(\.path) == ["B", "a/b.mvt", "a0"] && !kept.keepsUnlisted)
        }

        /// A site's patch leaves the tree hash to the signed manifest's patch edge: the applier
        /// needs it from the caller, and a wrong one refuses the result.
        @Test func aSitePatchTakesItsTreeHashFromTheCaller() throws {
            let release = SampleRelease()
            var options = PatchOptions(level: 3)
            options.embedsTreeHash = false
            let patch = release.directory.path("p")
            let stats = try PatchBuilder.build(from: release.old, to: release.new, output: patch, options: options)
            #expect(stats.manifestForm == 3)
            #expect(try PatchContainer.manifest(at: patch).treeHash == nil)
            let right = TreeHash.of(try FileTree.entries(in: release.new))
            #expect(throws: PatchError.self) { try PatchApplier.apply(patch: patch, oldTree: release.old, into: release.directory.path("o1")) }
            let wrong = String(right.reversed())
            #expect(throws: PatchError.treeMismatch(expected: wrong, found: right)) {
                _ = try PatchApplier.apply(
                    patch: patch, oldTree: release.old, into: release.directory.path("o2"), resumeIn: nil, treeHash: wrong)
            }
            let out = release.directory.path("o3")
            _ = try PatchApplier.apply(patch: patch, oldTree: release.old, into: out, resumeIn: nil, treeHash: right)
            #expect(Trees.contents(of: out) == Trees.contents(of: release.new))
            // With the tree hash embedded the patch is 32 bytes larger before compression.
            let embedded = release.directory.path("p-embedded")
            let withHash = try PatchBuilder.build(from: release.old, to: release.new, output: embedded, options: PatchOptions(level: 3))
            #expect(withHash.manifestRawBytes == stats.manifestRawBytes + 32)
        }

        /// A small written file has no digest in form 3: when its old base changed in place
        /// (same size), the wrong output is caught by the tree hash and nothing is kept.
        @Test func aWrongSmallFileWithoutADigestFailsTheTreeHash() throws {
            let dir = TemporaryDirectory("form3-wrong")
            var rng = SeededGenerator(seed: 11)
            let old = (0..<20_000).map { _ in UInt8(truncatingIfNeeded: rng.next() % 16) }
            var new = old
            for index in stride(from: 0, to: new.count, by: 97) { new[index] &+= 1 }
            Trees.write(old, "roads.bin", in: dir.path("old"))
            Trees.write(new, "roads.bin", in: dir.path("new"))
            Trees.write(Array("kept\n".utf8), "kept.txt", in: dir.path("old"))
            Trees.write(Array("kept\n".utf8), "kept.txt", in: dir.path("new"))
            let patch = dir.path("p")
            let stats = try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: patch, options: PatchOptions(level: 3))
            #expect(stats.manifestForm == 3)
            #expect(try PatchContainer.manifest(at: patch).targets.first?.sha256 == nil)
            var damaged = old
            damaged[10_000] &+= 3
            Trees.write(damaged, "roads.bin", in: dir.path("old"))
            #expect(throws: PatchError.self) { try PatchApplier.apply(patch: patch, oldTree: dir.path("old"), into: dir.path("out")) }
        }
    }
}
