import Foundation
import MapLoader
import MapPublisher
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension SeededGenerator {
    /// `count` random bytes.
    package mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }
}

/// Map-like test data: fixed-size records (id, coordinates, type, flags, name).
package enum Records {
    package static let size = 44
    private static let words = [
        "Main", "High", "Church", "Station", "Park", "Mill", "Bridge", "Lake", "River",
        "North", "South", "Market", "School", "Road", "Street", "Lane", "Hill",
    ]

    /// One record.
    package static func record(id: UInt32, lat: Int32, lon: Int32, using rng: inout SeededGenerator) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(size)
        withUnsafeBytes(of: id.littleEndian) { out += $0 }
        withUnsafeBytes(of: lat.littleEndian) { out += $0 }
        withUnsafeBytes(of: lon.littleEndian) { out += $0 }
        withUnsafeBytes(of: UInt16.random(in: 0...40, using: &rng).littleEndian) { out += $0 }
        withUnsafeBytes(of: UInt16.random(in: 0...7, using: &rng).littleEndian) { out += $0 }
        let name = (0..<Int.random(in: 1...3, using: &rng)).map { _ in words.randomElement(using: &rng)! }
            .joined(separator: " ")
        var nameBytes = Array(name.utf8.prefix(28))
        nameBytes += [UInt8](repeating: 0, count: 28 - nameBytes.count)
        return out + nameBytes
    }

    /// `count` records along a random walk.
    package static func make(count: Int, seed: UInt64) -> [[UInt8]] {
        var rng = SeededGenerator(seed: seed)
        var lat: Int32 = 515_000_000
        var lon: Int32 = -1_200_000
        return (0..<count).map { i in
            lat &+= Int32.random(in: -3000...3000, using: &rng)
            lon &+= Int32.random(in: -3000...3000, using: &rng)
            return record(id: UInt32(i), lat: lat, lon: lon, using: &rng)
        }
    }

    /// Deletes, edits and inserts about `fraction` of the records.
    package static func mutate(_ records: [[UInt8]], fraction: Double, seed: UInt64) -> [[UInt8]] {
        var rng = SeededGenerator(seed: seed)
        var out: [[UInt8]] = []
        var nextID = UInt32(records.count)
        for var record in records {
            let x = Double.random(in: 0..<1, using: &rng)
            if x < fraction / 3 { continue }
            if x < 2 * fraction / 3 {
                record[4] &+= 7
                record[9] &+= 3
            }
            out.append(record)
            if Double.random(in: 0..<1, using: &rng) < fraction / 3 {
                out.append(Records.record(id: nextID, lat: 1, lon: 2, using: &rng))
                nextID += 1
            }
        }
        return out
    }
}

/// File-tree helpers.
package enum Trees {
    /// Writes `bytes` at `path` below `root`, creating directories.
    package static func write(_ bytes: [UInt8], _ path: String, in root: URL) {
        let url = root.appendingPathComponent(path)
        try! FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try! Data(bytes).write(to: url)
    }

    /// Every file below `root` with its bytes.
    package static func contents(of root: URL) -> [String: Data] {
        var result: [String: Data] = [:]
        for entry in try! FileTree.files(in: root) {
            result[entry.path] = try! Data(contentsOf: root.appendingPathComponent(entry.path))
        }
        return result
    }

    /// The inode of the file at `url`, nil if it does not exist.
    package static func inode(_ url: URL) -> UInt64? {
        var st = stat()
        guard lstat(url.path, &st) == 0 else { return nil }
        return UInt64(st.st_ino)
    }

    /// Copies the tree at `from` to a new directory `to` (plain copies, no links).
    package static func copy(_ from: URL, to: URL) {
        try! FileManager.default.copyItem(at: from, to: to)
    }
}

/// The error a throwing expression raised, if it is a `PatchError`.
package func patchError(_ body: () throws -> Void) -> PatchError? {
    do {
        try body()
        return nil
    } catch let error as PatchError {
        return error
    } catch {
        return nil
    }
}

/// An old and a new release tree with every kind of change a patch has to carry.
package struct SampleRelease {
    package let directory = TemporaryDirectory("release")
    package var old: URL { directory.path("old") }
    package var new: URL { directory.path("new") }

    /// Paths the fixture leaves unchanged.
    package static let unchanged = ["docs/readme.txt", "meta/empty.dat", "tiles/0/0/0.mvt", "tiles/2/5/5.mvt"]
    /// New path → the old path with the same bytes (a move and a duplicate).
    package static let copies = [
        "tiles/moved/0-1-1.mvt": "tiles/0/1/1.mvt", "tiles/dup.mvt": "tiles/0/0/0.mvt",
        "meta/new-empty.dat": "meta/empty.dat",
    ]

    package init() {
        var rng = SeededGenerator(seed: 1)
        let roads = Records.make(count: 20_000, seed: 2)
        Trees.write(roads.flatMap { $0 }, "roads.bin", in: old)
        Trees.write(Records.mutate(roads, fraction: 0.02, seed: 3).flatMap { $0 }, "roads.bin", in: new)

        let lines = (0..<3000).map { "\($0),poi \($0 % 97),\(51 + Double($0 % 1000) / 1000),cafe\n" }
        Trees.write(Array(lines.joined().utf8), "pois.csv", in: old)
        var edited = lines
        for i in stride(from: 5, to: edited.count, by: 50) { edited[i] = "\(i),renamed \(i),0.5,pub\n" }
        edited.insert("9999,inserted,1.0,shop\n", at: 1500)
        Trees.write(Array(edited.joined().utf8), "pois.csv", in: new)

        let index = Records.make(count: 5000, seed: 4)
        Trees.write(index.flatMap { $0 }, "index/v1.idx", in: old)
        Trees.write(Records.mutate(index, fraction: 0.02, seed: 5).flatMap { $0 }, "index/v2.idx", in: new)

        for tree in [old, new] {
            Trees.write([], "meta/empty.dat", in: tree)
            Trees.write(Array("MapLoader sample data\n".utf8), "docs/readme.txt", in: tree)
        }
        Trees.write([], "meta/new-empty.dat", in: new)
        Trees.write(Array("2024.01\n".utf8), "meta/version.txt", in: old)
        Trees.write(Array("2024.02\n".utf8), "meta/version.txt", in: new)
        Trees.write(rng.bytes(3000), "retired/gone.bin", in: old)

        for z in 0..<3 {
            for x in 0..<6 {
                for y in 0..<6 {
                    let path = "tiles/\(z)/\(x)/\(y).mvt"
                    let tile = Records.make(count: Int.random(in: 1...20, using: &rng), seed: UInt64(z * 100 + x * 10 + y))
                        .flatMap { $0 }
                    Trees.write(tile, path, in: old)
                    if path == "tiles/0/1/1.mvt" {
                        Trees.write(tile, "tiles/moved/0-1-1.mvt", in: new)  // moved
                        continue
                    }
                    switch (z * 36 + x * 6 + y) % 9 {
                    case 0 where path != "tiles/0/0/0.mvt": continue  // deleted
                    case 2, 3:
                        var changed = tile
                        changed[changed.count / 2] &+= 1  // edited
                        Trees.write(changed, path, in: new)
                    default:
                        Trees.write(tile, path, in: new)  // unchanged
                    }
                }
            }
        }
        Trees.write(try! [UInt8](Data(contentsOf: old.appendingPathComponent("tiles/0/0/0.mvt"))), "tiles/dup.mvt", in: new)
        Trees.write(rng.bytes(2000), "added/random.bin", in: new)
        Trees.write(Array(String(repeating: "new layer notes, line after line\n", count: 200).utf8), "added/notes.txt", in: new)
    }
}

/// Large inputs for segmented and see-through tests, made on the fly.
package enum LargeFixtures {
    /// Writes a gzip file of `members` members (Python's zlib, at `level`) holding about
    /// `megabytes` MB of CSV-like records; `edits` records changed in place, one inserted.
    package static func writeGzip(_ url: URL, megabytes: Int, members: Int, edits: Int, level: Int = 6) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let script = """
            import gzip, random, sys
            random.seed(11)
            rows = [b"%d,place %d,%.5f,%.5f,%d\\n" % (i, random.randint(0, 99999), random.uniform(-180, 180),
                    random.uniform(-90, 90), random.randint(0, 10**6)) for i in range(\(megabytes) * 20000)]
            for k in range(\(edits)):
                at = (k * 7919) % len(rows)
                rows[at] = b"%d,edited %d\\n" % (at, k)
            if \(edits) > 0: rows.insert(len(rows) // 3, b"inserted,row\\n" * 40)
            raw = b"".join(rows)
            step = -(-len(raw) // \(members))
            out = b"".join(gzip.compress(raw[i:i + step], compresslevel=\(level), mtime=0) for i in range(0, len(raw), step))
            open(sys.argv[1], "wb").write(out)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, url.path]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    /// Writes `old` (random bytes) and `new`: bytes overwritten at 1/5, 3 kB inserted at
    /// 2/5, 1,000 bytes deleted at 4/5 (so later segments are shifted against the old file).
    /// About `size` bytes of gazetteer-like CSV records (id, name, coordinates,
    /// population), and a copy with `overwrites` scattered 20-byte overwrites and
    /// `insertions` of 200 bytes, from `seed`.
    package static func gazetteerPair(size: Int, overwrites: Int, insertions: Int, seed: UInt64) -> (old: [UInt8], new: [UInt8]) {
        var rng = SeededGenerator(seed: seed)
        var old: [UInt8] = []
        var id = 0
        while old.count < size {
            id += 1
            let line = "\(id),place \(rng.next() % 100_000),\(rng.next() % 180_000),\(rng.next() % 90_000),\(rng.next() % 1_000_000)\n"
            old += Array(line.utf8)
        }
        var new = old
        for _ in 0..<overwrites {
            let at = Int(rng.next() % UInt64(new.count - 20))
            for offset in 0..<20 { new[at + offset] = UInt8(32 + rng.next() % 95) }
        }
        for _ in 0..<insertions {
            new.insert(contentsOf: (0..<200).map { _ in UInt8(32 + rng.next() % 95) }, at: Int(rng.next() % UInt64(new.count)))
        }
        return (old, new)
    }

    package static func writePair(old: URL, new: URL, size: Int) throws {
        var bytes = [UInt8](repeating: 0, count: size)
        let random = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom"))
        bytes = Array(try random.read(upToCount: size)!)
        try random.close()
        try FileManager.default.createDirectory(at: old.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: new.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: old)
        var edited = bytes
        for i in 0..<200 { edited[size / 5 + i] = 0x5A }
        edited.removeSubrange(4 * size / 5..<4 * size / 5 + 1000)
        edited.insert(contentsOf: [UInt8](repeating: 0xA5, count: 3000), at: 2 * size / 5)
        try Data(edited).write(to: new)
    }
}

extension LargeFixtures {
    /// Writes `places.geojson.gz` (and a plain file) into `root` with Python's gzip module
    /// (zlib, level 6), `renamed` features renamed and, with `flushEvery`, a full flush
    /// every so many bytes, which zlib's plain deflate does not reproduce.
    package static func writeGeoJSONRelease(_ root: URL, renamed: Int, flushEvery: Int? = nil) throws {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data("unchanged\n".utf8).write(to: root.appendingPathComponent("readme.txt"))
        let script = """
            import gzip, json, random, sys, zlib
            random.seed(7)
            feats = [{"type": "Feature", "properties": {"name": "place %d" % i, "pop": random.randint(1, 10**6)},
                      "geometry": {"type": "Point", "coordinates": [round(random.uniform(-180, 180), 5), round(random.uniform(-90, 90), 5)]}}
                     for i in range(6000)]
            for i in range(0, \(renamed) * 97, 97): feats[i]["properties"]["name"] += " (renamed)"
            raw = json.dumps({"type": "FeatureCollection", "features": feats}).encode()
            flush = \(flushEvery.map(String.init) ?? "None")
            if flush is None:
                data = gzip.compress(raw, compresslevel=6, mtime=0)
            else:
                c = zlib.compressobj(6, zlib.DEFLATED, -15)
                body = b"".join(c.compress(raw[i:i + flush]) + c.flush(zlib.Z_FULL_FLUSH) for i in range(0, len(raw), flush)) + c.flush()
                data = b"\\x1f\\x8b\\x08\\x00\\x00\\x00\\x00\\x00\\x00\\xff" + body + (zlib.crc32(raw) & 0xffffffff).to_bytes(4, "little") + (len(raw) & 0xffffffff).to_bytes(4, "little")
            open(sys.argv[1], "wb").write(data)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, root.appendingPathComponent("places.geojson.gz").path]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    /// Runs a Python script with `arguments` and expects it to succeed.
    package static func python(_ script: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
