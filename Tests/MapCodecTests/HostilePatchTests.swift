import Foundation
import MapDelta
import MapModel
import MapPlatform
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// A signed patch is pinned by its bytes, not by what it then asks for: each attack of
/// issue "Hostile signed payloads" made small, against the real applier and a real file
/// system. Every case must be refused with ``PatchError/beyondLimits(detail:)`` before the
/// new tree gets a file, within what the group's signed metadata (``TreeLimits``) declares.
@Suite struct HostilePatchTests {
    /// Applies `patch` to an old tree of one file with `limits`, expecting a refusal that
    /// left the new tree without a file; returns the refusal's message.
    static func refused(_ patch: URL, limits: TreeLimits, in dir: TemporaryDirectory) throws -> String {
        let old = dir.path("old")
        Trees.write(Array("old".utf8), "a.txt", in: old)
        let new = dir.path("new-\(UUID().uuidString)")
        let error = patchError {
            _ = try PatchApplier.apply(
                patch: patch, oldTree: old, into: new, resumeIn: nil, treeHash: String(repeating: "0", count: 64), limits: limits)
        }
        guard case .beyondLimits? = error else {
            Issue.record("expected beyondLimits, got \(String(describing: error))")
            return ""
        }
        #expect(((try? FileTree.files(in: new.path)) ?? []).isEmpty, "nothing written")
        return error?.description ?? ""
    }

    /// Attack 1: a patch whose manifest lists far more files than the group declares (the
    /// adversarial pass listed 22.3 million in a 9.66 MB patch) is refused from the count,
    /// before the targets are read, let alone made.
    @Test func aPatchListingMoreFilesThanTheGroupDeclaresIsRefused() throws {
        let dir = TemporaryDirectory("hostile")
        let patch = dir.path("many.mlpatch")
        try HostilePatch.adding((0..<5000).map { "t/\($0)" }, to: patch)
        let line = try Self.refused(patch, limits: TreeLimits(files: 10, bytes: 1 << 20), in: dir)
        #expect(line.contains("5000 files, at most 10 declared") && line.contains("full download"), "\(line)")
        // Within the limits the same patch applies: the refusal is the limit, not the patch.
        let within = patchError {
            _ = try PatchApplier.apply(
                patch: patch, oldTree: dir.path("old"), into: dir.path("fits"), resumeIn: nil,
                treeHash: String(repeating: "0", count: 64), limits: TreeLimits(files: 5001, bytes: 1 << 20))
        }
        guard case .treeMismatch? = within else {
            Issue.record("expected treeMismatch, got \(String(describing: within))")
            return
        }
    }

    /// Attack 2: a 3 GiB target in a group declared at 1 MB is refused before a byte is
    /// written (it once filled a 1 GB file system, and a retry filled it again), and so are
    /// targets that only together pass the group's bytes.
    @Test func aTargetLargerThanTheGroupIsRefusedBeforeWriting() throws {
        let dir = TemporaryDirectory("hostile")
        let patch = dir.path("huge.mlpatch")
        try HostilePatch.hugeTarget(3 << 30, to: patch)
        let line = try Self.refused(patch, limits: TreeLimits(files: 10, bytes: 1_000_000), in: dir)
        #expect(line.contains("1000000 bytes declared") && line.contains("huge.bin"), "\(line)")
        // Many files each within the group's bytes, together past them.
        let together = dir.path("together.mlpatch")
        try HostilePatch.adding((0..<64).map { "f\($0)" }, to: together)
        let sum = try Self.refused(together, limits: TreeLimits(files: 100, bytes: 63), in: dir)
        #expect(sum.contains("63 bytes declared"), "\(sum)")
        // The old files a form-3 patch keeps count too: 63 new bytes and the kept a.txt.
        let kept = dir.path("kept.mlpatch")
        try HostilePatch.adding((0..<62).map { "f\($0)" }, to: kept)
        let keptLine = try Self.refused(kept, limits: TreeLimits(files: 100, bytes: 64), in: dir)
        #expect(keptLine.contains("the ones it keeps make 65 bytes"), "\(keptLine)")
    }

    /// Attack 4: a manifest that decompresses to 255 MiB of zeros (8 kB of patch) is refused
    /// from its header's length, before a byte of it is decompressed, where the patch's
    /// trees cannot need a manifest that large.
    @Test func aManifestLargerThanItsTreesCanNeedIsRefusedFromItsHeader() throws {
        let dir = TemporaryDirectory("hostile")
        let raw = 255 << 20
        let patch = dir.path("zeros.mlpatch")
        try HostilePatch.manifestOfZeros(raw, to: patch)
        #expect(try Data(contentsOf: patch).count < 64 << 10)
        let limits = TreeLimits(files: 10, bytes: 1 << 20)
        let line = try Self.refused(patch, limits: limits, in: dir)
        let bound = limits.patchManifestBytes(oldFiles: 1, cap: PatchFormat.maxManifestSize)
        #expect(line.contains("a manifest of \(raw) bytes, at most \(bound)"), "\(line)")
        #expect(bound < 1 << 20)
        // A tree of real size may need the format's whole cap, never more.
        #expect(
            TreeLimits(files: 1 << 20, bytes: 1 << 40).patchManifestBytes(oldFiles: 1 << 20, cap: PatchFormat.maxManifestSize)
                == PatchFormat.maxManifestSize)
    }

    /// Attack 3, in a patch: files each at the end of its own chain of folders make far
    /// more folders than files; refused at ``TreeLimits/folders`` before the inode table
    /// fills, with no more folders made than that.
    @Test func aPatchMakingMoreFoldersThanItsFilesCanHoldIsRefused() throws {
        let dir = TemporaryDirectory("hostile")
        // Paths of 4,001 bytes: 2,000 one-letter folders each.
        let deep = ["a", "b", "c", "d"].map { first in ([first] + Array(repeating: "a", count: 1999)).joined(separator: "/") + "/f" }
        let patch = dir.path("deep.mlpatch")
        try HostilePatch.adding(deep, to: patch)
        let old = dir.path("old")
        Trees.write(Array("old".utf8), "a.txt", in: old)
        let limits = TreeLimits(files: 10, bytes: 1 << 20)
        let new = dir.path("new")
        let error = patchError {
            _ = try PatchApplier.apply(
                patch: patch, oldTree: old, into: new, resumeIn: nil, treeHash: String(repeating: "0", count: 64), limits: limits)
        }
        guard case .beyondLimits(let detail)? = error else {
            Issue.record("expected beyondLimits, got \(String(describing: error))")
            return
        }
        #expect(detail.contains("\(limits.folders) folders"), "\(detail)")
        var folders = 0
        if let walker = FileManager.default.enumerator(atPath: new.path) {
            for case let path as String in walker where FileStatus.of(new.path + "/" + path)?.kind == .directory { folders += 1 }
        }
        #expect(folders <= limits.folders && folders >= limits.folders - 1, "\(folders) folders made, \(limits.folders) allowed")
    }

    /// Attack 5: a client's memory for a see-through file grew with its deflate streams
    /// (234 MB for a million). A recipe segment is held in 40 bytes (three of them for
    /// zlib's parameters, an optional PNG framing in seven, optional zstd parameters in
    /// three, optional deflate pieces in one reference of eight: 40 MB for a million
    /// streams; the Swift 6.3 optimizer crashes on a segment that shares one slot among
    /// the three), the rebuild deflates at most
    /// ``DeflateRecipe/batchSegments`` ahead, and a recipe has at most
    /// ``DeflateRecipe/maxSegments``, the one limit the publisher and the client share.
    @Test func aRecipeSegmentIsHeldInFortyBytes() {
        #expect(MemoryLayout<DeflateRecipe.Segment>.stride <= 40)
        #expect(MemoryLayout<DeflatePieces?>.size == 8)
        #expect(MemoryLayout<DeflateParameters>.size == 3)
        #expect(MemoryLayout<ZstdFrames.Parameters?>.size == 3)
        #expect(DeflateRecipe.batchSegments <= 4096 && DeflateRecipe.maxSegments == 1 << 20)
        let run = PNGRun(chunkSize: 8192, header: [0x78, 0xDA])
        #expect(run.chunkSize == 8192 && run.header == [0x78, 0xDA] && run.windowBits == 15)
        #expect(PNGRun(chunkSize: 1 << 40, header: [0x78]) == PNGRun(chunkSize: 0, header: []))
        #expect(DeflateParameters(level: 9, memLevel: 9, strategy: 1).description == "level 9, memLevel 9, strategy 1")
    }

    /// Case 5 on the old side: a patch may ask the client to expand an old file of any
    /// number of streams (a scanned see-through payload lists none of them). The scan stops
    /// past ``DeflateRecipe/maxSegments`` and the patch is refused before anything is
    /// expanded, as the publisher, which keeps the same limit, never makes such a patch.
    @Test func anOldFileOfMoreStreamsThanARecipeTakesIsNotExpanded() throws {
        let dir = TemporaryDirectory("hostile")
        let old = dir.path("old")
        let stream: [UInt8] = [0x78, 0x9C, 0x2B, 0xC9, 0xCC, 0x49, 0x05, 0x00, 0x04, 0x4C, 0x01, 0xAF]  // zlib of "tile"
        var bytes = Array("TILEARCH".utf8)
        bytes.reserveCapacity(8 + stream.count * (DeflateRecipe.maxSegments + 1))
        for _ in 0...DeflateRecipe.maxSegments { bytes += stream }
        Trees.write(bytes, "tiles.bin", in: old)
        let payload = [UInt8](repeating: 0, count: 16)
        let manifest = PatchManifest(
            sources: [.init(path: "tiles.bin", sha256: nil)],
            targets: [
                .init(
                    path: "tiles.bin", size: 1 << 20, sha256: SHA256Hash(bytes: [UInt8](repeating: 7, count: 32)),
                    origin: .patch(source: 0, .init(encoding: .scannedDeflateDelta, length: Int64(payload.count))))
            ], deletions: [], treeHash: nil, keepsUnlisted: true)
        let patch = dir.path("streams.mlpatch")
        try HostilePatch.write(manifest, payloads: payload, to: patch)
        let error = patchError {
            _ = try PatchApplier.apply(
                patch: patch, oldTree: old, into: dir.path("new"), resumeIn: nil, treeHash: String(repeating: "0", count: 64),
                limits: TreeLimits(files: 10, bytes: 1 << 30))
        }
        guard case .beyondLimits(let detail)? = error else {
            Issue.record("expected beyondLimits, got \(String(describing: error))")
            return
        }
        #expect(detail.contains("more than the 1048576 deflate streams a patch may expand"), "\(detail)")
    }

    /// The new side of a see-through file: a recipe that claims a terabyte of expansion for
    /// a 1 kB file is refused before a byte of the expansion is decoded to disk (the limit
    /// the publisher expands the new file within: 128 times, at least 64 MiB).
    @Test func aRecipeClaimingAHugeExpansionIsRefusedBeforeDecoding() throws {
        let dir = TemporaryDirectory("hostile")
        let recipe = DeflateRecipe(segments: [.init(rawBefore: 0, expandedLength: 1 << 40, parameters: DeflateParameters(level: 6))], tail: 0)
        let frame = try ZstdFrame.compress([UInt8](repeating: 0, count: 1 << 16), level: 3)
        let payload = recipe.encoded + frame
        let manifest = PatchManifest(
            sources: [],
            targets: [
                .init(
                    path: "tile.gz", size: 1000, sha256: SHA256Hash(bytes: [UInt8](repeating: 7, count: 32)),
                    origin: .add(.init(encoding: .deflateDelta, length: Int64(payload.count))))
            ], deletions: [], treeHash: nil, keepsUnlisted: true)
        let patch = dir.path("expansion.mlpatch")
        try HostilePatch.write(manifest, payloads: payload, to: patch)
        Trees.write(Array("old".utf8), "a.txt", in: dir.path("old"))
        let error = patchError {
            _ = try PatchApplier.apply(
                patch: patch, oldTree: dir.path("old"), into: dir.path("new"), resumeIn: nil,
                treeHash: String(repeating: "0", count: 64), limits: TreeLimits(files: 10, bytes: 1 << 20))
        }
        guard case .beyondLimits(let detail)? = error else {
            Issue.record("expected beyondLimits, got \(String(describing: error))")
            return
        }
        #expect(detail == "an expansion of \(1 << 40) bytes for a 1000-byte file, at most \(64 << 20)", "\(detail)")
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.url.path)
        #expect(!left.contains { $0.contains(".expand-") } && !FileManager.default.fileExists(atPath: dir.path("new/tile.gz").path), "\(left)")
    }
}
