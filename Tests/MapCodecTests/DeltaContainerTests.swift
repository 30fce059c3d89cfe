import Foundation
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

extension DeltaTests {
    /// Hostile and damaged containers: every one must throw, none may crash or write outside.
    @Suite struct ContainerTests {
        /// Writes a container for `manifest` whose payload region is `payloads`.
        private func craft(_ manifest: PatchManifest, payloads: [UInt8] = [], to url: URL) throws {
            let raw = PatchManifestEncoder.encode(manifest)
            let spool = url.path + ".payloads"
            try Data(payloads).write(to: URL(fileURLWithPath: spool))
            try PatchContainerWriter.write(
                rawManifestCount: raw.count,
                compressedManifest: try PatchContainerWriter.compressManifest(raw, level: 3),
                payloads: spool, to: url)
        }

        private let someHash = SHA256Hash(bytes: [UInt8](repeating: 7, count: 32))!

        @Test(arguments: ["../evil", "a/../../evil", "/etc/evil", "a//b", "./a", "a/.", "a/", "", "a\u{0}b"])
        func unsafeTargetPathIsRejected(path: String) throws {
            let dir = TemporaryDirectory()
            let patch = dir.path("p")
            let manifest = PatchManifest(
                sources: [],
                targets: [
                    .init(path: path, size: 4, sha256: someHash, origin: .add(.init(encoding: .stored, length: 4)))
                ], deletions: [])
            try craft(manifest, payloads: Array("evil".utf8), to: patch)
            let out = dir.path("inner/out")
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
            let error = patchError { try PatchApplier.apply(patch: patch, oldTree: dir.path("old"), into: out) }
            #expect(error == .unsafePath(path))
            #expect(!FileManager.default.fileExists(atPath: dir.path("inner/evil").path))
            #expect(!FileManager.default.fileExists(atPath: dir.path("evil").path))
        }

        @Test(arguments: ["../secret", "/etc/passwd"])
        func unsafeSourcePathIsRejected(path: String) throws {
            let dir = TemporaryDirectory()
            let patch = dir.path("p")
            let manifest = PatchManifest(
                sources: [.init(path: path, sha256: someHash)],
                targets: [
                    .init(path: "x", size: 0, sha256: someHash, origin: .copy(source: 0))
                ], deletions: [])
            try craft(manifest, to: patch)
            let error = patchError { try PatchApplier.apply(patch: patch, oldTree: dir.path("old"), into: dir.path("out")) }
            #expect(error == .unsafePath(path))
        }

        @Test func fileBelowAnotherFileIsRejected() throws {
            let dir = TemporaryDirectory()
            let patch = dir.path("p")
            let add = PatchManifest.Origin.add(.init(encoding: .stored, length: 0))
            try craft(
                PatchManifest(
                    sources: [],
                    targets: [
                        .init(path: "a", size: 0, sha256: someHash, origin: add),
                        .init(path: "a/b", size: 0, sha256: someHash, origin: add),
                    ], deletions: []), to: patch)
            guard case .corrupt? = patchError({ _ = try PatchContainer.manifest(at: patch) }) else {
                Issue.record("nested target accepted")
                return
            }
        }

        @Test func notAPatchIsRecognised() throws {
            let dir = TemporaryDirectory()
            try Data("PK\u{3}\u{4} not a patch at all".utf8).write(to: dir.path("p"))
            #expect(patchError { _ = try PatchContainer.manifest(at: dir.path("p")) } == .notAPatch(path: dir.path("p").path))
        }

        @Test func absurdManifestLengthsAreRefusedBeforeAllocating() throws {
            let dir = TemporaryDirectory()
            var bytes = PatchFormat.magic
            bytes += [0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0x7f]
            try Data(bytes).write(to: dir.path("p"))
            guard case .corrupt? = patchError({ _ = try PatchContainer.manifest(at: dir.path("p")) }) else {
                Issue.record("absurd lengths accepted")
                return
            }
            bytes = PatchContainerWriter.header(compressed: 1000, raw: 2000)
            try Data(bytes).write(to: dir.path("q"))
            guard case .truncated? = patchError({ _ = try PatchContainer.manifest(at: dir.path("q")) }) else {
                Issue.record("manifest longer than file accepted")
                return
            }
        }

        @Test func everyTruncationThrows() throws {
            let release = SampleRelease()
            let patch = release.directory.path("p.mlpatch")
            _ = try PatchBuilder.build(from: release.old, to: release.new, output: patch, options: PatchOptions(level: 3))
            let bytes = try [UInt8](Data(contentsOf: patch))
            var cuts = Set([0, 4, 8, 15, 16, 17, bytes.count / 2, bytes.count - 1])
            var rng = SeededGenerator(seed: 11)
            while cuts.count < 40 { cuts.insert(Int.random(in: 0..<bytes.count, using: &rng)) }
            for (i, cut) in cuts.sorted().enumerated() {
                let truncated = release.directory.path("t\(i)")
                try Data(bytes[0..<cut]).write(to: truncated)
                let error = patchError { try PatchApplier.apply(patch: truncated, oldTree: release.old, into: release.directory.path("out\(i)")) }
                #expect(error != nil, "cut at \(cut) of \(bytes.count) was accepted")
            }
        }

        @Test func randomByteFlipsThrowOrLeaveTheExactTarget() throws {
            let release = SampleRelease()
            let patch = release.directory.path("p.mlpatch")
            _ = try PatchBuilder.build(from: release.old, to: release.new, output: patch, options: PatchOptions(level: 3))
            let bytes = try [UInt8](Data(contentsOf: patch))
            let target = Trees.contents(of: release.new)
            var rng = SeededGenerator(seed: 12)
            var thrown = 0
            for i in 0..<60 {
                var damaged = bytes
                let position =
                    i < 20
                    ? Int.random(in: 0..<min(400, bytes.count), using: &rng)
                    : Int.random(in: 0..<bytes.count, using: &rng)
                damaged[position] ^= UInt8.random(in: 1...255, using: &rng)
                let url = release.directory.path("f\(i)")
                try Data(damaged).write(to: url)
                let out = release.directory.path("fo\(i)")
                if patchError({ try PatchApplier.apply(patch: url, oldTree: release.old, into: out) }) != nil {
                    thrown += 1
                } else {
                    #expect(Trees.contents(of: out) == target, "flip at \(position) produced a wrong tree")
                }
            }
            #expect(thrown >= 55)
        }
    }
}
