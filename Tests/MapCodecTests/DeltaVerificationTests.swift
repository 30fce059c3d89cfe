import Foundation
import MapDelta
import MapModel
import MapPlatform
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

extension DeltaTests {
    /// The applier checks every old file before use and every produced file after writing.
    @Suite struct VerificationTests {
        /// A release, its patch (level 3 for speed) and a private copy of the old tree to damage.
        private func prepared() throws -> (SampleRelease, URL, URL) {
            let release = SampleRelease()
            let patch = release.directory.path("p.mlpatch")
            _ = try PatchBuilder.build(from: release.old, to: release.new, output: patch, options: PatchOptions(level: 3))
            let old = release.directory.path("old-copy")
            Trees.copy(release.old, to: old)
            return (release, patch, old)
        }

        /// The old tree's files as a client records them (its installed index).
        private func recorded(_ tree: URL) throws -> [FileEntry] {
            try FileTree.files(in: tree).map { file in
                FileEntry(path: file.path, size: file.size, sha256: try FileHashing.sha256(ofFileAt: tree.appendingPathComponent(file.path)).hex)
            }
        }

        @Test func changedDeltaBaseIsRefusedNamingThePath() throws {
            let (release, patch, old) = try prepared()
            // roads.bin is under 1 MiB: the patch (form 3) has no digest for it nor for the
            // file made from it; the client's record of the old tree names it.
            let index = try recorded(old)
            let base = old.appendingPathComponent("roads.bin")
            var bytes = try [UInt8](Data(contentsOf: base))
            bytes[100] ^= 0xff
            try Data(bytes).write(to: base)
            let error = patchError {
                _ = try PatchApplier.apply(patch: patch, oldTree: old, into: release.directory.path("out"), resumeIn: nil, oldFiles: index)
            }
            guard case .sourceMismatch(let path, let expected, let found)? = error else {
                Issue.record("expected sourceMismatch, got \(String(describing: error))")
                return
            }
            #expect(path == "roads.bin" && expected != found)
            #expect(error!.description.contains("roads.bin") && error!.description.contains("full download"))
            // Without the record the tree hash still refuses the result.
            let bare = patchError { try PatchApplier.apply(patch: patch, oldTree: old, into: release.directory.path("out2")) }
            guard case .treeMismatch? = bare else {
                Issue.record("expected treeMismatch, got \(String(describing: bare))")
                return
            }
        }

        /// A kept file changed in place (same size) is one the form-2 patch has no digest for:
        /// the client's record names it before anything is linked; without a record the tree
        /// hash refuses the result.
        @Test func aKeptFileChangedInPlaceIsRefusedByTheRecordOrTheTreeHash() throws {
            let (release, patch, old) = try prepared()
            let index = try recorded(old)
            let kept = old.appendingPathComponent("docs/readme.txt")
            var bytes = try [UInt8](Data(contentsOf: kept))
            bytes[0] ^= 0x20
            try Data(bytes).write(to: kept)
            let named = patchError {
                _ = try PatchApplier.apply(patch: patch, oldTree: old, into: release.directory.path("out"), resumeIn: nil, oldFiles: index)
            }
            guard case .sourceMismatch(let path, _, _)? = named else {
                Issue.record("expected sourceMismatch, got \(String(describing: named))")
                return
            }
            #expect(path == "docs/readme.txt")
            let caught = patchError { try PatchApplier.apply(patch: patch, oldTree: old, into: release.directory.path("out2")) }
            guard case .treeMismatch(let expected, let found)? = caught else {
                Issue.record("expected treeMismatch, got \(String(describing: caught))")
                return
            }
            #expect(expected != found && caught!.description.contains("full download"))
        }

        @Test func changedUnchangedFileIsRefusedBeforeLinking() throws {
            let (release, patch, old) = try prepared()
            let index = try recorded(old)
            try Data("tampered\n".utf8).write(to: old.appendingPathComponent("docs/readme.txt"))
            let error = patchError {
                _ = try PatchApplier.apply(patch: patch, oldTree: old, into: release.directory.path("out"), resumeIn: nil, oldFiles: index)
            }
            guard case .sourceMismatch(let path, _, _)? = error else {
                Issue.record("expected sourceMismatch, got \(String(describing: error))")
                return
            }
            #expect(path == "docs/readme.txt")
        }

        @Test func changedCopySourceIsRefused() throws {
            let (release, patch, old) = try prepared()
            try Data("x".utf8).write(to: old.appendingPathComponent("tiles/0/1/1.mvt"))
            let error = patchError { try PatchApplier.apply(patch: patch, oldTree: old, into: release.directory.path("out")) }
            guard case .sourceMismatch(let path, _, _)? = error else {
                Issue.record("expected sourceMismatch, got \(String(describing: error))")
                return
            }
            #expect(path == "tiles/0/1/1.mvt")
        }

        @Test func missingOldFileIsReported() throws {
            let (release, patch, old) = try prepared()
            try FileManager.default.removeItem(at: old.appendingPathComponent("index/v1.idx"))
            let error = patchError { try PatchApplier.apply(patch: patch, oldTree: old, into: release.directory.path("out")) }
            #expect(error == .sourceMissing(path: "index/v1.idx"))
        }

        /// A damaged payload byte: a file the patch gives its digest for fails as it is
        /// written, and is named; a small one of form 3 fails the tree hash.
        @Test func corruptedPayloadByteFailsTheOutputHashCheck() throws {
            let (release, patch, _) = try prepared()
            let manifest = try PatchContainer.manifest(at: patch)
            let stored = try #require(manifest.targets.first { $0.path == "added/random.bin" })
            let payload = try #require(stored.origin.payload)
            #expect(payload.encoding == .stored && stored.sha256 == nil)
            var bytes = try [UInt8](Data(contentsOf: patch))
            bytes[Int(payload.offset) + 10] ^= 0x01
            try Data(bytes).write(to: patch)
            let error = patchError { try PatchApplier.apply(patch: patch, oldTree: release.old, into: release.directory.path("out")) }
            guard case .treeMismatch? = error else {
                Issue.record("expected treeMismatch, got \(String(describing: error))")
                return
            }
            // The same patch with every digest (form 2) names the file.
            let full = try PatchManifestDecoder.keepingUnlisted(manifest, oldFiles: FileTree.files(in: release.old))
            var named = full
            for index in named.targets.indices where named.targets[index].origin.payload != nil {
                named.targets[index].sha256 = try FileHashing.hash(ofFile: release.new.path + "/" + named.targets[index].path).hash
            }
            let raw = PatchManifestEncoder.encode(named, form: 2)
            let spool = release.directory.path("payloads")
            let manifestLength = (0..<4).reduce(0) { $0 | Int(bytes[8 + $1]) << (8 * $1) }  // the header's u32 at 8
            try Data(bytes[(PatchFormat.headerSize + manifestLength)...]).write(to: spool)
            let formTwo = release.directory.path("p2")
            try PatchContainerWriter.write(
                rawManifestCount: raw.count, compressedManifest: try PatchContainerWriter.compressManifest(raw, level: 3), payloads: spool.path,
                to: formTwo, form: 2)
            let error2 = patchError { try PatchApplier.apply(patch: formTwo, oldTree: release.old, into: release.directory.path("out2")) }
            guard case .outputMismatch(let path, let expected, let found, _, _)? = error2 else {
                Issue.record("expected outputMismatch, got \(String(describing: error2))")
                return
            }
            #expect(path == "added/random.bin" && expected != found)
            #expect(!FileManager.default.fileExists(atPath: release.directory.path("out2/added/random.bin").path))
        }

        @Test func destinationMustBeEmpty() throws {
            let (release, patch, _) = try prepared()
            let out = release.directory.path("out")
            Trees.write([1], "stale.bin", in: out)
            let error = patchError { try PatchApplier.apply(patch: patch, oldTree: release.old, into: out) }
            #expect(error == .destinationNotEmpty(path: out.path))
        }

        @Test func copyFallbackAcrossDevicesIsVerified() throws {
            // /dev/shm is tmpfs: link(2) from there into the temp dir fails with EXDEV.
            let shm = URL(fileURLWithPath: "/dev/shm/delta-\(UUID().uuidString)")
            let dir = TemporaryDirectory()
            var st1 = stat()
            var st2 = stat()
            guard stat("/dev/shm", &st1) == 0, stat(dir.url.path, &st2) == 0, st1.st_dev != st2.st_dev else { return }
            defer { try? FileManager.default.removeItem(at: shm) }
            let bytes = Array("same bytes on another device\n".utf8)
            try Data(bytes).write(to: shm)
            let hash = SHA256Hash.of(bytes.withUnsafeBytes { UnsafeRawBufferPointer($0) })
            let linked = try TreeLinker.linkOrCopy(
                source: shm.path, destination: dir.path("copy").path,
                displayPath: "copy", sha256: hash, size: Int64(bytes.count))
            #expect(!linked)
            #expect(try Data(contentsOf: dir.path("copy")) == Data(bytes))
            let wrong = patchError {
                try TreeLinker.linkOrCopy(
                    source: shm.path, destination: dir.path("copy2").path, displayPath: "copy2",
                    sha256: SHA256Hash(bytes: [UInt8](repeating: 0, count: 32))!, size: Int64(bytes.count))
            }
            guard case .outputMismatch? = wrong else {
                Issue.record("copy was not verified")
                return
            }
        }
    }
}
