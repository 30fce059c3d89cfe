import Foundation
import ManifestServer
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// Real file names: UTF-8 (NFC and NFD kept apart, as file systems keep them) publish,
/// install and update byte for byte; names and folders clients would refuse are refused
/// at publish.
@Suite struct FileNameTests {
    static let nfc = "caf\u{E9}.txt"
    static let nfd = "cafe\u{301}.txt"

    /// A site whose de-berlin base group holds non-ASCII names, published as v1 (and v2 when
    /// `revisions` says so, with edits to those files).
    static func site(revisions: Int) throws -> (TemporaryDirectory, ManifestServer, String, PublicKey) {
        let dir = TemporaryDirectory("maploader-names")
        let key = try SigningKeyFile.generate(at: dir.path("publisher.key"))
        for revision in 1...revisions {
            let release = dir.path("r\(revision)")
            let builder = try ReleaseBuilder.make(at: release, revision: revision)
            try builder.write(Data("日本 \(revision)\n".utf8), "de-berlin/base/日本/東京.txt")
            try builder.write(Data(String(repeating: "composed \(revision) ", count: 200).utf8), "de-berlin/base/\(nfc)")
            try builder.write(Data(String(repeating: "decomposed ", count: 200).utf8), "de-berlin/base/\(nfd)")
            try Publisher.publish(
                release: release, site: dir.path("site"),
                options: PublishOptions(
                    version: "v\(revision)", level: 3, validity: 3600,
                    keyFile: dir.path("publisher.key")))
        }
        let server = ManifestServer(root: dir.path("site"))
        return (dir, server, "http://127.0.0.1:\(try server.start())", key)
    }

    /// Every file below `folder` by its path's exact bytes and its content.
    static func files(_ folder: URL) throws -> [[UInt8]: Data] {
        var result: [[UInt8]: Data] = [:]
        for file in try FileTree.files(in: folder.resolvingSymlinksInPath()) {
            result[Array(file.path.utf8)] = try Data(contentsOf: folder.appendingPathComponent(file.path))
        }
        return result
    }

    @Test func utf8NamesInstallAndUpdateByteForByte() async throws {
        let (dir, server, url, key) = try Self.site(revisions: 1)
        defer { server.stop() }
        let loader = MapLoader(configuration: .init(server: url, dataDirectory: dir.path("data"), trust: TrustPolicy(keys: [key])))
        try await loader.install(["de-berlin"])
        let installed = try Self.files(loader.currentFolder.appendingPathComponent("de-berlin/base"))
        let release = try Self.files(dir.path("r1/data/de-berlin/base"))
        #expect(installed == release)
        let composed = try #require(installed[Array(Self.nfc.utf8)], "the NFC name is installed")
        let decomposed = try #require(installed[Array(Self.nfd.utf8)], "the NFD name is installed")
        #expect(composed != decomposed, "NFC and NFD are two files with their own bytes")

        try ReleaseBuilder.make(at: dir.path("r2"), revision: 2)
        let builder = ReleaseBuilder(root: dir.path("r2"))
        try builder.write(Data("日本 2\n".utf8), "de-berlin/base/日本/東京.txt")
        try builder.write(Data(String(repeating: "composed 2 ", count: 200).utf8), "de-berlin/base/\(Self.nfc)")
        try builder.write(Data(String(repeating: "decomposed ", count: 200).utf8), "de-berlin/base/\(Self.nfd)")
        try Publisher.publish(
            release: dir.path("r2"), site: dir.path("site"),
            options: PublishOptions(version: "v2", level: 3, validity: 3600, keyFile: dir.path("publisher.key")))
        let report = try await loader.performUpdate(strategy: .delta)
        #expect(report.steps.contains { $0.package == "de-berlin" && $0.group == "base" && $0.method == .delta })
        #expect(try Self.files(loader.currentFolder.appendingPathComponent("de-berlin/base")) == Self.files(dir.path("r2/data/de-berlin/base")))
        #expect(try await loader.verify().problems.isEmpty)
    }

    @Test(arguments: ["symlinked group", "symlinked package", "backslash", "invalid UTF-8", "hard link to a file outside"])
    func namesAndFoldersClientsWouldRefuseAreRefusedAtPublish(_ case: String) throws {
        let dir = TemporaryDirectory("maploader-names")
        let release = dir.path("release")
        let builder = try ReleaseBuilder.make(at: release)
        let data = release.appendingPathComponent("data")
        let outside = dir.path("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try Data("secret".utf8).write(to: outside.appendingPathComponent("secret.txt"))
        let expected: String
        switch `case` {
        case "symlinked group":
            try FileManager.default.removeItem(at: data.appendingPathComponent("ch/poi"))
            try FileManager.default.createSymbolicLink(at: data.appendingPathComponent("ch/poi"), withDestinationURL: outside)
            expected = "data/ch/poi is a symbolic link"
        case "symlinked package":
            try FileManager.default.moveItem(at: data.appendingPathComponent("ch"), to: dir.path("ch-real"))
            try FileManager.default.createSymbolicLink(at: data.appendingPathComponent("ch"), withDestinationURL: dir.path("ch-real"))
            expected = "data/ch is a symbolic link"
        case "backslash":
            try builder.write(Data("x".utf8), "ch/base/win\\dows.txt")
            expected = "clients refuse this name"
        case "hard link to a file outside":
            try FileManager.default.linkItem(
                at: outside.appendingPathComponent("secret.txt"),
                to: data.appendingPathComponent("ch/base/secret.txt"))
            expected = "data/ch/base/secret.txt has 1 hard link(s) outside the release"
        default:
            let folder = data.appendingPathComponent("ch/base").path
            // A name with a raw 0xFF byte, which no UTF-8 string can spell.
            let name = (Array((folder + "/bad").utf8) + [0xFF]).map { CChar(bitPattern: $0) } + [0]
            let fd = open(name, O_CREAT | O_WRONLY, 0o644)
            #expect(fd >= 0)
            close(fd)
            expected = "not valid UTF-8"
        }
        do {
            try Publisher.publish(release: release, site: dir.path("site"), options: PublishOptions(version: "v1", level: 3))
            Issue.record("publish accepted a release with a \(`case`)")
        } catch {
            #expect("\(error)".contains(expected), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path("site/catalog.json").path))
    }

    /// Hard links inside one release (two groups sharing a file) publish; links to files
    /// outside it only when the publisher says so (a release made with `cp -al`).
    @Test func hardLinksOutsideTheReleasePublishOnlyWhenAllowed() throws {
        let dir = TemporaryDirectory("maploader-links")
        let release = dir.path("release")
        try ReleaseBuilder.make(at: release)
        let data = release.appendingPathComponent("data")
        try FileManager.default.linkItem(
            at: data.appendingPathComponent("ch/base/meta.json"),
            to: data.appendingPathComponent("ch/poi/meta.json"))
        try Publisher.publish(release: release, site: dir.path("site"), options: PublishOptions(version: "v1", level: 3))
        let copy = dir.path("release-v2")
        try FileManager.default.copyItem(at: release, to: copy)
        try FileManager.default.removeItem(at: copy.appendingPathComponent("data/ch/base/roads.bin"))
        try FileManager.default.linkItem(
            at: data.appendingPathComponent("ch/base/roads.bin"),
            to: copy.appendingPathComponent("data/ch/base/roads.bin"))
        #expect(throws: PublishError.self) {
            try Publisher.publish(release: copy, site: dir.path("site"), options: PublishOptions(version: "v2", level: 3))
        }
        var options = PublishOptions(version: "v2", level: 3)
        options.allowHardLinks = true
        try Publisher.publish(release: copy, site: dir.path("site"), options: options)
    }
}
