import Foundation
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// Release folders a third party hands a publisher, and the patches they make for devices
/// (issue "Hostile signed payloads", cases 5, 6 and 8): the real `maploader publish` and
/// `update`, real files, real memory and disk figures.
@Suite struct HostileReleaseTests {
    /// Two releases v1 and v2 (the test releases) with `extra` written as de-berlin's
    /// `base/extra.bin` by a Python snippet given the file's path and the revision.
    static func releases(in dir: TemporaryDirectory, extra script: String) throws {
        for revision in [1, 2] {
            let root = dir.path("r\(revision)")
            try ReleaseBuilder.make(at: root, revision: revision)
            try LargeFixtures.python(script, [root.appendingPathComponent("data/de-berlin/base/extra.bin").path, "\(revision)"])
        }
    }

    /// Case 8: a 300 kB gzip file that inflates to 300 MB once made the publisher write
    /// both versions' expansions (2 GB for a 1 GB bomb) into the site folder. Expansions stop
    /// at 128 times the file (at least 64 MiB), the file gets a byte-level delta with a
    /// note, and the scratch is the folder given (`--scratch`, here a 160 MB tmpfs it would
    /// have filled), never the site.
    @Test(.enabled(if: ReadOnlyMount.available, "needs mount(2) for a small scratch file system"))
    func aDeflateBombIsPublishedByteLevelWithinASmallScratch() async throws {
        let dir = TemporaryDirectory("hostile-release")
        try Self.releases(
            in: dir,
            extra: """
                import sys, zlib
                c = zlib.compressobj(9, zlib.DEFLATED, 31)
                with open(sys.argv[1], 'wb') as f:
                    for i in range(300):
                        f.write(c.compress(bytes(1 << 20) if i != 150 else bytes((1 << 20) - 7) + sys.argv[2].encode() * 7))
                    f.write(c.flush())
                """)
        let scratch = try ReadOnlyMount(size: "160m")
        defer { scratch.unmount() }
        let site = dir.path("site")
        for version in ["v1", "v2"] {
            let result = try await CLI.run([
                "publish", dir.path("r\(version.dropFirst())").path, "--site", site.path, "--version", version,
                "--scratch", scratch.url.path, "--jobs", "1",
            ])
            #expect(result.status == 0, "\(result.stderr)")
            if version == "v2" {
                #expect(result.stderr.contains("expand past") && result.stderr.contains("byte-level delta kept"), "\(result.stderr)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: site.appendingPathComponent(".publish-tmp").path))
        let manifest = try Manifest.decode(Data(contentsOf: site.appendingPathComponent(SiteLayout.manifest("v2"))))
        let base = try #require(manifest.root.leaves.first { $0.id == "de-berlin" }?.artifacts?["base"])
        let notes = base.patches?.first?.notes ?? []
        #expect(notes.contains { $0.contains("extra.bin") && $0.contains("expand past") }, "\(notes)")
    }

    /// Cases 5 and 6: a file of a million tiny zlib streams. Its patch once cost the device
    /// 234 MB (memory grew with the stream count); a file of more streams than a client's
    /// recipe takes cost the publisher 47 s for a patch every device refused. Now the
    /// update applies the 1,000,000-stream patch in under 150 MB, and 1,048,577 streams get
    /// a byte-level delta with a note, which devices apply.
    @Test(arguments: [1_000_000, DeflateRecipe.maxSegments + 1])
    func aFileOfAMillionDeflateStreamsUpdatesInBoundedMemory(streams: Int) async throws {
        let dir = TemporaryDirectory("hostile-release")
        try Self.releases(
            in: dir,
            extra: """
                import sys, zlib
                revision = int(sys.argv[2])
                with open(sys.argv[1], 'wb') as f:
                    f.write(b'TILEARCH')
                    for i in range(\(streams)):
                        f.write(zlib.compress(b'tile %d rev %d' % (i, revision if i % 100000 == 7 else 1)))
                """)
        let site = dir.path("site")
        let key = dir.path("publisher.key")
        let publicKey = try SigningKeyFile.generate(at: key)
        let server = ManifestServer(root: site)
        let data = dir.path("device")
        var common: [String] = []
        for version in ["v1", "v2"] {
            let result = try await CLI.run([
                "publish", dir.path("r\(version.dropFirst())").path, "--site", site.path, "--version", version, "--key", key.path,
            ])
            #expect(result.status == 0, "\(result.stderr)")
            guard version == "v1" else { break }
            common = ["--server", "http://127.0.0.1:\(try server.start())", "--data-dir", data.path, "--trust-key", publicKey.base64]
            #expect(try await CLI.run(["install", "de-berlin"] + common).status == 0)
        }
        defer { server.stop() }
        let manifest = try Manifest.decode(Data(contentsOf: site.appendingPathComponent(SiteLayout.manifest("v2"))))
        let notes = manifest.root.leaves.first { $0.id == "de-berlin" }?.artifacts?["base"]?.patches?.first?.notes ?? []
        let byteLevel = notes.contains { $0.contains("a client's recipe takes") }
        #expect(byteLevel == (streams > DeflateRecipe.maxSegments), "\(notes)")
        let (updated, peak) = try await CLI.runMeasuringMemory(["update", "--delta", "--json"] + common)
        #expect(updated.status == 0, "\(updated.stderr)")
        #expect(updated.stdout.contains("\"method\" : \"delta\""), "\(updated.stdout)")
        #expect(peak > 0 && peak < 150_000_000, "peak RSS \(peak) bytes")
        #expect(try snapshot(data.appendingPathComponent("current/de-berlin/base")) == snapshot(dir.path("r2/data/de-berlin/base")))
    }

    /// The publisher never makes an archive its clients refuse: a group whose files sit at
    /// the end of long chains of folders (three files under 2,000 folders each, past twice
    /// the files and 4,096) is refused with one line naming the group, and no version is
    /// published.
    @Test func aGroupOfMoreFoldersThanClientsAcceptIsNotPublished() async throws {
        let dir = TemporaryDirectory("hostile-release")
        let release = try ReleaseBuilder.make(at: dir.path("r1"), revision: 1)
        for top in ["x", "y", "z"] {
            try release.write(Data("deep".utf8), "de-berlin/base/" + ([top] + Array(repeating: "d", count: 1999)).joined(separator: "/") + "/f")
        }
        let site = dir.path("site")
        let result = try await CLI.run(["publish", dir.path("r1").path, "--site", site.path, "--version", "v1"])
        #expect(result.status != 0)
        let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("error:") }
        #expect(
            lines.count == 1 && lines[0].contains("data/de-berlin/base has 6006 folders for 10 files; clients accept at most 4116"),
            "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: site.appendingPathComponent(SiteLayout.catalog).path))
    }
}
