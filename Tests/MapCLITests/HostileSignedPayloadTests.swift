import Foundation
import ManifestServer
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// The client cases of issue "Hostile signed payloads", end to end: a compromised
/// publisher signs a manifest whose blobs pass their pins but ask, once opened, for more
/// than the manifest declares for the group. The real `maploader` against a real HTTP
/// server on 127.0.0.1; each case asserts the outcome, bounded memory, what is left on
/// disk, and that the installed maps are exactly as they were.
@Suite struct HostileSignedPayloadTests {
    typealias Device = AttackTests.Device

    /// A hostile patch in place of de-berlin's `base` patch v1→v2.
    enum HostileKind: String, CaseIterable, Sendable {
        /// Attack 1: far more files than the group declares (22.3 million once drove the
        /// client to 3.9 GB RSS and 4.7 million files).
        case manyFiles
        /// Attack 2: a 3 GiB file in a group of a few kB (it once filled the file system,
        /// and every retry filled it again).
        case hugeFile
        /// Attack 4: a manifest of 255 MiB of zeros in 8 kB (292 MB RSS before the refusal).
        case manifestOfZeros
        /// Attack 3 through a patch: chains of folders far beyond the group's files.
        case folderChains

        func write(to url: URL) throws {
            switch self {
            case .manyFiles: try HostilePatch.adding((0..<3_000).map { "t/\($0)" }, to: url)
            case .hugeFile: try HostilePatch.hugeTarget(3 << 30, to: url)
            case .manifestOfZeros: try HostilePatch.manifestOfZeros(255 << 20, to: url)
            case .folderChains:
                let letters = (0..<26).map { String(UnicodeScalar(UInt8(97 + $0))) }
                try HostilePatch.adding(letters.map { ([$0] + Array(repeating: "a", count: 1999)).joined(separator: "/") + "/f" }, to: url)
            }
        }
    }

    /// Replaces the patch edge v1→v2 of de-berlin's `base` by `bytes`, signed into v2's manifest.
    static func signHostilePatch(_ kind: HostileKind, on device: Device) throws {
        let file = device.site.dir.path("hostile-\(kind.rawValue).mlpatch")
        try kind.write(to: file)
        let bytes = try Data(contentsOf: file)
        let sha256 = FileHashing.sha256(of: bytes)
        try Self.store(bytes, as: sha256, in: device.site)
        try AttackTests.publishSigned(device.site, version: "v2") { manifest in
            AttackTests.editLeaf("de-berlin", in: &manifest) { group, artifact in
                guard group == "base" else { return }
                for index in (artifact.patches ?? []).indices where artifact.patches![index].from == "v1" {
                    artifact.patches![index].sha256 = sha256
                    artifact.patches![index].size = Int64(bytes.count)
                }
            }
        }
    }

    /// Each hostile patch is refused before it writes past the group's declared files and
    /// bytes, and the update falls back to the full archive (which the publisher signed
    /// too, and which checks out): exit 0, v2 installed, the refusal named in the report,
    /// under 150 MB of memory, and nothing of the patch left in the data directory.
    @Test(arguments: HostileKind.allCases)
    func aHostileSignedPatchIsRefusedAndTheFullArchiveInstalled(_ kind: HostileKind) async throws {
        let device = try await Device()
        try Self.signHostilePatch(kind, on: device)
        let (result, peak) = try await device.run(["update", "--json"], against: ManifestServer(root: device.site.site))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("asks for more than the signed manifest declares"), "\(kind): \(result.stdout)")
        #expect(peak > 0 && peak < 150_000_000, "peak RSS \(peak) bytes")
        #expect(try snapshot(device.data.appendingPathComponent("current/de-berlin/base")) == snapshot(device.site.release(2, "de-berlin", "base")))
        #expect(try Self.bytes(in: device.data) < 4 << 20, "data directory after the refusal")
    }

    /// The same patches where the full archive cannot help (the publisher signed a wrong
    /// one too): the update stops with exit 6 and one line, and the installed maps stay v1.
    @Test(arguments: [HostileKind.manyFiles, .hugeFile])
    func aHostileSignedPatchWithoutAGoodArchiveLeavesTheMapsAsTheyWere(_ kind: HostileKind) async throws {
        let device = try await Device()
        try Self.signHostilePatch(kind, on: device)
        let wrong = device.site.dir.path("wrong.tar.gz")
        try LargeFixtures.python(
            """
            import io, sys, tarfile
            with tarfile.open(sys.argv[1], 'w:gz') as t:
                info = tarfile.TarInfo('x'); info.size = 1; t.addfile(info, io.BytesIO(b'x'))
            """, [wrong.path])
        let bytes = try Data(contentsOf: wrong)
        let sha256 = FileHashing.sha256(of: bytes)
        try Self.store(bytes, as: sha256, in: device.site)
        var manifest = try device.site.manifest("v2")
        AttackTests.editLeaf("de-berlin", in: &manifest) { group, artifact in
            if group == "base" { (artifact.sha256, artifact.size, artifact.format) = (sha256, Int64(bytes.count), .tarGzip) }
        }
        try AttackTests.publishSigned(device.site, version: "v2") { $0 = manifest }
        let (result, peak) = try await device.run(["update"], against: ManifestServer(root: device.site.site))
        #expect(result.status == 6, "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").filter { $0.hasPrefix("error:") }.count == 1, "\(result.stderr)")
        #expect(peak > 0 && peak < 150_000_000, "peak RSS \(peak) bytes")
        try device.expectUnchanged()
        #expect(try Self.bytes(in: device.data) < 4 << 20)
    }

    /// Attack 3: a signed 1.5 MB archive of a million folders (folders count toward neither
    /// `files` nor `unpackedSize`) once left 786,000 folders and 3 GB in staging, and filled
    /// a small inode table. Here 200,000 folder entries in a `.tar.gz` re-signed as
    /// de-hamburg's `base`, installed onto a tmpfs of 20,000 inodes: refused at the folder
    /// cap with exit 6 and one line, no inode table filled, and the staging removed.
    @Test(.enabled(if: ReadOnlyMount.available, "needs mount(2) for a tmpfs with a small inode table"))
    func anArchiveOfAFloodOfFoldersIsRefusedAtTheCap() async throws {
        let device = try await Device()
        let flood = device.site.dir.path("flood.tar.gz")
        try LargeFixtures.python(
            """
            import io, sys, tarfile
            with tarfile.open(sys.argv[1], 'w:gz') as t:
                for i in range(200000):
                    info = tarfile.TarInfo('d%d' % i); info.type = tarfile.DIRTYPE; t.addfile(info)
            """, [flood.path])
        let bytes = try Data(contentsOf: flood)
        let sha256 = FileHashing.sha256(of: bytes)
        try Self.store(bytes, as: sha256, in: device.site)
        try AttackTests.publishSigned(device.site, version: "v2") { manifest in
            AttackTests.editLeaf("de-hamburg", in: &manifest) { _, artifact in
                (artifact.sha256, artifact.size, artifact.format, artifact.patches) = (sha256, Int64(bytes.count), .tarGzip, nil)
            }
        }
        let mount = try ReadOnlyMount(size: "64m", inodes: 20_000)
        defer { mount.unmount() }
        let data = mount.url.appendingPathComponent("data")
        let server = ManifestServer(root: device.site.site)
        let serverPort = try server.start()
        defer { server.stop() }
        let (result, peak) = try await CLI.runMeasuringMemory([
            "install", "de-hamburg", "--server", "http://127.0.0.1:\(serverPort)", "--data-dir", data.path,
            "--trust-key", device.site.publicKey.base64,
        ])
        #expect(result.status == 6, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("error:") }
        #expect(lines.count == 1 && lines[0].contains("folders"), "\(result.stderr)")
        #expect(peak > 0 && peak < 150_000_000, "peak RSS \(peak) bytes")
        var folders = 0
        if let walker = FileManager.default.enumerator(atPath: data.path) {
            for case _ as String in walker { folders += 1 }
        }
        #expect(folders < 100, "\(folders) entries left in the data directory")
        #expect(!(try await CLI.run(["list", "--installed", "--data-dir", data.path]).stdout.contains("de-hamburg")))
    }

    /// Puts `bytes` among the site's blobs, as the publisher would.
    /// A signed manifest whose hashes are paths (64 characters, not 64 hex digits): the
    /// blob's "download" would be a file beside the data directory, which a short pin would
    /// have wiped and a resume appended a server's bytes to; a patch edge's hash would
    /// have been deleted on a full disk. The manifest is refused as malformed before any
    /// file is touched, and the file outside stays as it was.
    @Test(arguments: ["the archive", "a patch"])
    func aSignedManifestWhoseHashesArePathsIsRefused(_ target: String) async throws {
        let device = try await AttackTests.Device()
        let victim = device.site.dir.path("victim.txt")
        let text = Data("the user's own file, beside the data directory\n".utf8)
        try text.write(to: victim)
        let traversal = String(repeating: "./", count: 24) + "../../victim.txt"
        #expect(traversal.count == 64)
        try AttackTests.publishSigned(device.site, version: "v2") { manifest in
            AttackTests.editLeaf("de-berlin", in: &manifest) { group, artifact in
                guard group == "base" else { return }
                if target == "the archive" {
                    artifact.sha256 = traversal
                    artifact.size = 10
                } else {
                    for index in (artifact.patches ?? []).indices { artifact.patches![index].sha256 = traversal }
                }
            }
        }
        try await device.expectRefused(["update"], status: 6, ["malformed hashes"])
        #expect(try Data(contentsOf: victim) == text)
    }

    static func store(_ bytes: Data, as sha256: String, in site: TestSite) throws {
        let url = site.site.appendingPathComponent(SiteLayout.blob(sha256))
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try bytes.write(to: url)
    }

    /// Bytes of the regular files below `url`.
    static func bytes(in url: URL) throws -> Int64 {
        var total: Int64 = 0
        let walker = FileManager.default.enumerator(at: url, includingPropertiesForKeys: [.fileSizeKey, .isRegularFileKey])
        while let file = walker?.nextObject() as? URL {
            let values = try file.resourceValues(forKeys: [.fileSizeKey, .isRegularFileKey])
            if values.isRegularFile == true { total += Int64(values.fileSize ?? 0) }
        }
        return total
    }
}
