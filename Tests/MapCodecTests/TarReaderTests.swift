import Foundation
import MapPlatform
import MapTestSupport
import Testing

@testable import MapStore

/// The client's own tar reader (no libarchive in an app), on archives the real tools write:
/// GNU tar with zstd and gzip, Python's tarfile in the ustar, GNU and pax formats (long and
/// non-ASCII names), a gzip file of several members; each read with every chunking of the
/// compressed file from 1 byte up, as a network or a disk may hand it over.
@Suite struct TarReaderTests {
    /// A release folder with long, deep and non-ASCII names, an empty file and a file larger
    /// than one read.
    static func writeTree(_ root: URL) throws {
        var generator = SeededGenerator(seed: 12)
        let files: [(String, Data)] = [
            ("de/berlin/tiles.bin", Data((0..<200_000).map { _ in UInt8(truncatingIfNeeded: generator.next()) })),
            ("de/berlin/empty.txt", Data()),
            ("de/köln/straßen.json", Data(String(repeating: "{\"name\": \"Hohe Straße\"}\n", count: 300).utf8)),
            (String(repeating: "long-folder-name/", count: 8) + String(repeating: "n", count: 120) + ".csv", Data("id,name\n1,x\n".utf8)),
        ]
        for (path, data) in files {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
        }
    }

    /// Runs a command line and expects it to succeed.
    static func run(_ arguments: [String], in folder: URL) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = folder
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(arguments.joined(separator: " "))")
    }

    /// How each archive is made from the folder `tree` (its name says which tool and format).
    static let makers: [String: String] = [
        "gnu-tar.tar.zst": "tar --format=gnu --zstd -cf ../gnu-tar.tar.zst *",
        "posix-tar.tar.gz": "tar --format=posix -czf ../posix-tar.tar.gz *",
        "python-ustar.tar.gz":
            "python3 -c \"import os, tarfile; t = tarfile.open('../python-ustar.tar.gz', 'w:gz', format=tarfile.USTAR_FORMAT); [t.add(n) for n in sorted(os.listdir('.'))]; t.close()\"",
        "python-gnu.tar.gz":
            "python3 -c \"import os, tarfile; t = tarfile.open('../python-gnu.tar.gz', 'w:gz', format=tarfile.GNU_FORMAT); [t.add(n) for n in sorted(os.listdir('.'))]; t.close()\"",
        "python-pax.tar.gz":
            "python3 -c \"import os, tarfile; t = tarfile.open('../python-pax.tar.gz', 'w:gz', format=tarfile.PAX_FORMAT); [t.add(n) for n in sorted(os.listdir('.'))]; t.close()\"",
        "two-members.tar.gz":
            "tar --format=posix -cf ../whole.tar * && head -c 70000 ../whole.tar | gzip > ../two-members.tar.gz && tail -c +70001 ../whole.tar | gzip >> ../two-members.tar.gz",
        "two-frames.tar.zst":
            "tar --format=posix -cf ../whole2.tar * && head -c 70000 ../whole2.tar | zstd -q > ../two-frames.tar.zst && tail -c +70001 ../whole2.tar | zstd -q >> ../two-frames.tar.zst",
    ]

    @Test(arguments: makers.keys.sorted())
    func archivesTheToolsWriteReadTheSameAtEveryChunking(_ name: String) throws {
        let dir = TemporaryDirectory("tar-\(name)")
        try Self.writeTree(dir.path("tree"))
        // The ustar format holds names up to 255 bytes split at a slash; the long name is 263.
        if name == "python-ustar.tar.gz" {
            try FileManager.default.removeItem(at: dir.path("tree/long-folder-name"))
        }
        try Self.run(["sh", "-c", Self.makers[name]!], in: dir.path("tree"))
        let expected = try snapshot(dir.path("tree"))
        for chunk in [1, 7, 512, 4093, 1 << 16] {
            let out = dir.path("out-\(chunk)")
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
            let extraction = try ArchiveExtractor.extract(
                ArchiveStream(path: dir.path(name).path, chunk: chunk), into: out, limits: .init(files: 10, bytes: 1 << 20),
                leavingOut: [:], progress: { _ in }, isCancelled: { false })
            #expect(Dictionary(uniqueKeysWithValues: extraction.files.map { ($0.path, $0.sha256) }) == expected, "\(name), \(chunk) B a read")
            #expect(try snapshot(out) == expected, "\(name) read \(chunk) bytes at a time")
        }
    }

    /// A header whose size is near `Int64.max` (base-256, as GNU tar writes large sizes),
    /// on a pax global header or a file: refused in one line where the data ends, never an
    /// overflow in the reader's arithmetic.
    @Test(arguments: [UInt8(ascii: "g"), UInt8(ascii: "0")])
    func aSizeNearTheLargestNumberIsRefusedNotTrapped(type: UInt8) throws {
        var block = [UInt8](repeating: 0, count: 512)
        block.replaceSubrange(0..<5, with: Array("huge!".utf8))
        block.replaceSubrange(100..<108, with: Array("0000644\0".utf8))
        block[124] = 0x80
        block.replaceSubrange(128..<136, with: [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        block[156] = type
        block.replaceSubrange(257..<263, with: Array("ustar\0".utf8))
        block.replaceSubrange(148..<156, with: Array(repeating: UInt8(ascii: " "), count: 8))
        let sum = block.reduce(0) { $0 + Int($1) }
        block.replaceSubrange(148..<156, with: Array(String(format: "%06o\0 ", sum).utf8))
        let dir = TemporaryDirectory("tar-huge")
        try Data(try ZstdFrame.compress(block + [UInt8](repeating: 7, count: 2048), level: 3)).write(to: dir.path("huge.tar.zst"))
        try FileManager.default.createDirectory(at: dir.path("out"), withIntermediateDirectories: true)
        #expect {
            try ArchiveExtractor.extract(dir.path("huge.tar.zst"), into: dir.path("out"), limits: .init(files: 10, bytes: 1 << 40))
        } throws: { error in
            "\(error)".contains("ends inside") && !"\(error)".contains("\n")
        }
    }

    /// A damaged archive is refused in one line and never read past its damage: a flipped
    /// header byte, a file cut inside an entry, a frame cut short.
    @Test(arguments: [
        ("header byte flipped", "checksum"), ("cut inside an entry", "ends inside"), ("cut inside the zstd frame", "ends inside"),
    ])
    func aDamagedArchiveIsRefused(_ damage: String, expected: String) throws {
        let dir = TemporaryDirectory("tar-damaged")
        try Self.writeTree(dir.path("tree"))
        try Self.run(["sh", "-c", "tar --format=posix -cf ../plain.tar *"], in: dir.path("tree"))
        var tar = try Data(contentsOf: dir.path("plain.tar"))
        switch damage {
        case "header byte flipped": tar[3] ^= 0x20
        case "cut inside an entry": tar = tar.prefix(100_000)
        default: break
        }
        try tar.write(to: dir.path("damaged.tar"))
        try Self.run(["sh", "-c", "zstd -q -f damaged.tar -o damaged.tar.zst"], in: dir.url)
        if damage == "cut inside the zstd frame" {
            let whole = try Data(contentsOf: dir.path("damaged.tar.zst"))
            try whole.prefix(whole.count / 2).write(to: dir.path("damaged.tar.zst"))
        }
        try FileManager.default.createDirectory(at: dir.path("out"), withIntermediateDirectories: true)
        #expect {
            try ArchiveExtractor.extract(dir.path("damaged.tar.zst"), into: dir.path("out"), limits: .init(files: 10, bytes: 1 << 20))
        } throws: { error in
            "\(error)".contains(expected) && !"\(error)".contains("\n")
        }
    }
}
