#if LZMA
    import Foundation
    import MapDelta
    import MapPlatform
    import MapPublisher
    import MapTestSupport
    import Testing

    /// LZMA2 payloads: small files of many small numbers (map tiles) go to LZMA2 where it is
    /// smaller than every zstd payload, and the client decodes them within bounds.
    @Suite struct LzmaDeltaTests {
        /// A tile-like file: features of a few tags from a small vocabulary and random-walk
        /// coordinates as zigzag varints, as vector tiles hold them.
        static func tile(_ rng: inout SeededGenerator, features: Int) -> [UInt8] {
            let keys = ["class", "name", "oneway", "height", "rank"]
            let values = ["residential", "primary", "Hauptstraße", "Lindenallee", "park", "forest", "river"]
            var out: [UInt8] = []
            func varint(_ value: UInt64) {
                var value = value
                while value >= 0x80 {
                    out.append(UInt8(value & 0x7F) | 0x80)
                    value >>= 7
                }
                out.append(UInt8(value))
            }
            for id in 0..<features {
                varint(UInt64(id))
                for _ in 0..<(1 + Int(rng.next() % 3)) {
                    out += Array(keys[Int(rng.next() % UInt64(keys.count))].utf8) + [0]
                    out += Array(values[Int(rng.next() % UInt64(values.count))].utf8) + [0]
                }
                let points = 2 + Int(rng.next() % 12)
                varint(UInt64(points))
                for _ in 0..<(2 * points) {
                    let step = Int64(rng.next() % 441) - 220
                    varint(UInt64(bitPattern: (step << 1) ^ (step >> 63)))
                }
            }
            return out
        }

        /// Old and new folders of tiles: the new one adds tiles, edits one and adds a file of a
        /// kind the old folder lacks (no base: an add).
        static func writeTiles(_ dir: TemporaryDirectory) throws {
            var rng = SeededGenerator(seed: 7)
            var old: [String: [UInt8]] = [:]
            for index in 0..<6 { old["tiles/7/\(index).mvt"] = tile(&rng, features: 40 + index * 30) }
            var new = old
            for index in 6..<10 { new["tiles/7/\(index).mvt"] = tile(&rng, features: 60) }
            new["tiles/7/2.mvt"]! += tile(&rng, features: 5)
            new["extra/points.bin"] = tile(&rng, features: 80)
            for (name, files) in [("old", old), ("new", new)] {
                for (path, bytes) in files {
                    let url = dir.path("\(name)/\(path)")
                    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try Data(bytes).write(to: url)
                }
            }
        }

        @Test func newTilesGoToLzmaAndApplyByteForByte() async throws {
            let dir = TemporaryDirectory("lzma")
            try Self.writeTiles(dir)
            let stats = try await RawThread.value {
                try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path("p"), options: PatchOptions(level: 19))
            }
            let lzma: Set<PatchEncoding> = [.lzma, .lzmaDelta, .lzmaCrossDelta]
            let written = stats.files.filter { $0.operation == .add || $0.operation == .patch }
            #expect(written.count == 6)
            #expect(stats.file("extra/points.bin")?.encoding == .lzma)
            for file in written {
                let zstd = file.tried.filter { !lzma.contains($0.key) }.values.min() ?? .max
                #expect(file.tried.keys.contains { lzma.contains($0) }, "\(file.path): no LZMA2 trial in \(file.tried)")
                // Every new tile is coded smaller by LZMA2 than by any zstd payload, and kept so.
                if file.operation == .add || file.path != "tiles/7/2.mvt" {
                    #expect(
                        lzma.contains(file.encoding!) && file.payloadBytes < zstd,
                        "\(file.path): \(file.encoding!) \(file.payloadBytes) B, best zstd \(zstd) B")
                }
            }
            _ = try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out"))
            #expect(try snapshot(dir.path("out")) == snapshot(dir.path("new")))
        }

        /// An LZMA2 payload of `bytes` against `prefix`, in a file of the folder.
        static func payload(_ bytes: [UInt8], prefix: [UInt8], in dir: TemporaryDirectory) throws -> (file: SystemFile, length: Int64) {
            let source = dir.path("source").path
            try Data(bytes).write(to: URL(fileURLWithPath: source))
            let path = dir.path("payload").path
            let length = try prefix.withUnsafeBytes { prefix in
                try LzmaEncoder.encode(path: source, size: Int64(bytes.count), prefix: prefix, into: try SystemFile.createOrTruncate(path))
            }
            return (try SystemFile.openForReading(path), length)
        }

        /// Decodes `length` bytes of `file` expecting `size` bytes against `prefix`.
        static func decode(_ file: SystemFile, length: Int64, prefix: [UInt8], size: Int64) throws -> [UInt8] {
            var out: [UInt8] = []
            try prefix.withUnsafeBytes { prefix in
                try LzmaDelta.decode(from: file, offset: 0, length: length, prefix: prefix, expectedSize: size, displayPath: "t.mvt") {
                    out += $0
                }
            }
            return out
        }

        @Test func aDamagedOrMislabelledStreamIsRefused() throws {
            let dir = TemporaryDirectory("lzma-hostile")
            var rng = SeededGenerator(seed: 3)
            let old = Self.tile(&rng, features: 200)
            let new = old + Self.tile(&rng, features: 50)
            let (file, length) = try Self.payload(new, prefix: old, in: dir)
            #expect(try Self.decode(file, length: length, prefix: old, size: Int64(new.count)) == new)
            // Cut short, the stream has no end.
            #expect(throws: PatchError.self) { try Self.decode(file, length: length - 3, prefix: old, size: Int64(new.count)) }
            // A size smaller or larger than what the stream holds.
            #expect(throws: PatchError.self) { try Self.decode(file, length: length, prefix: old, size: Int64(new.count) - 1) }
            #expect(throws: PatchError.self) { try Self.decode(file, length: length, prefix: old, size: Int64(new.count) + 1) }
            // Bytes after the end of the stream.
            let longer = dir.path("longer").path
            try (Data(contentsOf: dir.path("payload")) + Data([0, 0, 0])).write(to: URL(fileURLWithPath: longer))
            #expect(throws: PatchError.self) {
                try Self.decode(try SystemFile.openForReading(longer), length: length + 3, prefix: old, size: Int64(new.count))
            }
            // A file whose dictionary would pass the bound is refused before anything is allocated.
            #expect(throws: PatchError.self) { try Self.decode(file, length: length, prefix: old, size: LzmaDelta.maxDictionary) }
            // Garbage is an error or a wrong output, never a crash (the applier checks the digest).
            var damaged = try [UInt8](Data(contentsOf: dir.path("payload")))
            for index in stride(from: 5, to: damaged.count, by: 7) { damaged[index] ^= 0x5A }
            let garbage = dir.path("garbage").path
            try Data(damaged).write(to: URL(fileURLWithPath: garbage))
            let decoded = try? Self.decode(try SystemFile.openForReading(garbage), length: length, prefix: old, size: Int64(new.count))
            let same = decoded == new
            #expect(!same)
        }
    }
#endif
