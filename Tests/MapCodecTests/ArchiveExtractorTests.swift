import Foundation
import MapTestSupport
import Testing

@testable import MapLoader

/// Real archives, made by Python's tarfile so they can hold what our writer never would.
@Suite struct ArchiveExtractorTests {
    /// Runs a Python snippet that writes `out.tar.gz` with tarfile `t` open.
    static func makeArchive(_ body: String, in dir: TemporaryDirectory) throws -> URL {
        let script = """
            import tarfile, io
            t = tarfile.open('\(dir.path("out.tar.gz").path)', 'w:gz')
            def add(name, data=b'x', type=tarfile.REGTYPE, link=''):
                info = tarfile.TarInfo(name); info.type = type; info.linkname = link; info.size = len(data) if type == tarfile.REGTYPE else 0
                t.addfile(info, io.BytesIO(data) if type == tarfile.REGTYPE else None)
            \(body.replacingOccurrences(of: "\n", with: "\n"))
            t.close()
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return dir.path("out.tar.gz")
    }

    static func extract(_ body: String, limits: TreeLimits = .init(files: 100, bytes: 1 << 20)) throws -> (
        Result<[FileEntry], any Error>, TemporaryDirectory
    ) {
        let dir = TemporaryDirectory()
        let archive = try makeArchive(body, in: dir)
        let destination = dir.path("dest")
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
        return (Result { try ArchiveExtractor.extract(archive, into: destination, limits: limits) }, dir)
    }

    @Test func extractsFilesAndHashesThem() throws {
        let (result, dir) = try Self.extract("add('a/b.txt', b'hello')\nadd('c.bin', b'\\x00\\x01')\nadd('d/', type=tarfile.DIRTYPE)")
        let files = try result.get()
        #expect(files.map(\.path) == ["a/b.txt", "c.bin"])
        #expect(files[0].sha256 == FileHashing.sha256(of: Data("hello".utf8)))
        #expect(try String(contentsOf: dir.path("dest/a/b.txt"), encoding: .utf8) == "hello")
    }

    @Test(arguments: [
        ("add('../evil', b'x')", "unsafe path"),
        ("add('a/../../evil', b'x')", "unsafe path"),
        ("add('/etc/evil', b'x')", "unsafe path"),
        ("add('link', type=tarfile.SYMTYPE, link='/etc')", "not a regular file"),
        ("add('a', b'x')\nadd('hard', type=tarfile.LNKTYPE, link='a')", "hard link"),
        ("add('fifo', type=tarfile.FIFOTYPE)", "not a regular file"),
        ("add('dev', type=tarfile.CHRTYPE)", "not a regular file"),
        ("add('a', b'x')\nadd('a', b'y')", "appears twice"),
        ("[add('f%d' % i, b'x') for i in range(5)]", "more than the 4 files"),
        ("add('big', b'x' * 5000)", "more than the 4096 bytes"),
    ])
    func refusesUnsafeEntries(body: String, expected: String) throws {
        let (result, dir) = try Self.extract(body, limits: .init(files: 4, bytes: 4096))
        guard case .failure(let error) = result else {
            Issue.record("archive was accepted: \(body)")
            return
        }
        #expect("\(error)".contains(expected), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: dir.url.deletingLastPathComponent().appendingPathComponent("evil").path))
    }

    /// Attack 3 of issue "Hostile signed payloads": folder entries count toward neither the
    /// files nor the bytes a manifest declares, so a 1.5 MB signed archive of a million
    /// folders once left 786,000 of them in staging (and filled a small inode table). The
    /// folders are held to ``TreeLimits/folders``: 10,000 folder entries for a group of 4
    /// files stop at the 4,104th with a one-line refusal, whether listed flat or nested.
    @Test(arguments: ["add('d%d/' % i, type=tarfile.DIRTYPE)", "add('/'.join(['n'] * 3 + [str(i)]) + '/', type=tarfile.DIRTYPE)"])
    func anArchiveOfFoldersStopsAtWhatItsFilesCanHold(entry: String) throws {
        let limits = TreeLimits(files: 4, bytes: 4096)
        let (result, dir) = try Self.extract("add('a', b'x')\nfor i in range(10000): \(entry)", limits: limits)
        guard case .failure(let error) = result else {
            Issue.record("10,000 folders were accepted")
            return
        }
        #expect("\(error)" == "more than the \(limits.folders) folders a tree of the files the manifest declares can hold", "\(error)")
        let made = FileManager.default.enumerator(atPath: dir.path("dest").path)?.allObjects.count ?? 0
        #expect(made <= limits.folders + 1, "\(made) entries made")
        // Within the cap the same kind of archive unpacks: the refusal is the cap.
        let (fits, _) = try Self.extract("add('a', b'x')\nfor i in range(4000): \(entry)", limits: limits)
        #expect((try? fits.get())?.count == 1)
    }

    /// The same flood through an exported site's tree folder (a stick the manifest names
    /// by tree hash): files at the ends of long chains of folders are refused before one
    /// folder is made.
    @Test func anExportedTreeOfFolderChainsIsRefusedBeforeCopying() throws {
        let dir = TemporaryDirectory()
        for top in ["x", "y", "z"] {
            Trees.write(Array("deep".utf8), ([top] + Array(repeating: "d", count: 1999)).joined(separator: "/") + "/f", in: dir.path("tree"))
        }
        let destination = dir.path("dest")
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
        let limits = TreeLimits(files: 4, bytes: 4096)
        #expect(throws: ArchiveExtractor.Refusal.self) { try TreeCopy.copy(from: dir.path("tree"), into: destination, limits: limits) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: destination.path).isEmpty)
    }

    /// A publisher diffing against an old version unpacks only what differs from the
    /// release: a file with the same path and bytes is hashed, listed and not written.
    @Test func leavesOutFilesTheCallerHolds() throws {
        let dir = TemporaryDirectory()
        let archive = try Self.makeArchive(
            "add('tiles/1.mvt', b'same')\nadd('tiles/2.mvt', b'old bytes')\nadd('roads.bin', b'new')\nadd('more/x', b'x')", in: dir)
        let destination = dir.path("dest")
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
        let held = [
            FileEntry(path: "tiles/1.mvt", size: 4, sha256: FileHashing.sha256(of: Data("same".utf8))),
            FileEntry(path: "tiles/2.mvt", size: 9, sha256: FileHashing.sha256(of: Data("new bytes".utf8))),
            FileEntry(path: "more/x", size: 1, sha256: FileHashing.sha256(of: Data("x".utf8))),
        ]
        let extraction = try ArchiveExtractor.extract(
            archive, into: destination, limits: .init(files: 10, bytes: 1 << 20),
            leavingOut: Dictionary(uniqueKeysWithValues: held.map { (PathKey($0.path), $0) }))
        #expect(extraction.files.map(\.path) == ["more/x", "roads.bin", "tiles/1.mvt", "tiles/2.mvt"])
        #expect(extraction.leftOut == [PathKey("tiles/1.mvt"), PathKey("more/x")])
        #expect(extraction.files[2].sha256 == FileHashing.sha256(of: Data("same".utf8)))
        #expect(!FileManager.default.fileExists(atPath: dir.path("dest/tiles/1.mvt").path))
        #expect(!FileManager.default.fileExists(atPath: dir.path("dest/more").path), "a folder only left-out files need is not made")
        #expect(try String(contentsOf: dir.path("dest/tiles/2.mvt"), encoding: .utf8) == "old bytes")
        #expect(try String(contentsOf: dir.path("dest/roads.bin"), encoding: .utf8) == "new")
    }

    /// A file left out still counts as a file: a folder of its name is refused, as it is
    /// when the file is written.
    @Test(arguments: [
        "add('a', b'same')\nadd('a/b', b'x')", "add('a/b', b'x')\nadd('a', b'same')",
        "add('a', b'same')\nadd('a/', type=tarfile.DIRTYPE)", "add('x/y', b'same')\nadd('x', b'new')",
        "add('x', b'new')\nadd('x/y', b'same')", "add('a', b'same')\nadd('a/y', b'same')",
        "add('x/y', b'same')\nadd('x', b'same')",
    ])
    func refusesAFolderNamedAsALeftOutFile(body: String) throws {
        let dir = TemporaryDirectory()
        let archive = try Self.makeArchive(body, in: dir)
        try FileManager.default.createDirectory(at: dir.path("dest"), withIntermediateDirectories: true)
        let same = FileHashing.sha256(of: Data("same".utf8))
        let held = ["a", "x/y", "a/y", "x"].map { FileEntry(path: $0, size: 4, sha256: same) }
        #expect(throws: ArchiveExtractor.Refusal.self) {
            try ArchiveExtractor.extract(
                archive, into: dir.path("dest"), limits: .init(files: 10, bytes: 1 << 20),
                leavingOut: Dictionary(uniqueKeysWithValues: held.map { (PathKey($0.path), $0) }))
        }
    }

    @Test func refusesGarbage() throws {
        let dir = TemporaryDirectory()
        try Data("this is not an archive".utf8).write(to: dir.path("junk.tar.gz"))
        try FileManager.default.createDirectory(at: dir.path("dest"), withIntermediateDirectories: true)
        #expect(throws: ArchiveExtractor.Refusal.self) {
            try ArchiveExtractor.extract(dir.path("junk.tar.gz"), into: dir.path("dest"), limits: .init(files: 1, bytes: 1))
        }
    }
}
