import Foundation
import MapModel
import MapPlatform
import MapPublisher
import MapTestSupport
import Synchronization
import Testing

@testable import MapDelta

/// The sparse suffix delta (``PatchEncoding/sparseSuffixDelta``): a few scattered edits in
/// a large file cost their own bytes (runs and replaced bytes), not a frame of
/// differences that spends about 4 bytes on every 128 KiB of zeros; where the differences
/// frame is smaller (numbers shifted everywhere), it is kept.
@Suite struct SparseSuffixDeltaTests {
    /// Writes a gazetteer-like pair of `size` bytes with scattered 20-byte overwrites and
    /// 200-byte insertions to `old.bin` and `new.bin`; returns the new bytes.
    static func writePair(in dir: TemporaryDirectory, size: Int, overwrites: Int = 30, insertions: Int = 5) throws -> [UInt8] {
        let (old, new) = LargeFixtures.gazetteerPair(size: size, overwrites: overwrites, insertions: insertions, seed: 21)
        try Data(old).write(to: dir.path("old.bin"))
        try Data(new).write(to: dir.path("new.bin"))
        return new
    }

    /// Decodes the payload file `payload` of `form` against `old.bin`.
    static func decode(_ payload: URL, form: SuffixDelta.Form, in dir: TemporaryDirectory, size: Int) throws -> [UInt8] {
        let old = try MappedFile.source(dir.path("old.bin").path, displayPath: "old.bin")
        let file = try SystemFile.openForReading(payload.path)
        var out: [UInt8] = []
        try SuffixDelta.decode(
            from: file, offset: 0, length: try file.size(), old: old.bytes, targetSize: Int64(size),
            displayPath: "places.csv", form: form
        ) { out += $0 }
        return out
    }

    @Test func scatteredEditsCostTheirOwnBytesAndDecodeByteForByte() throws {
        let dir = TemporaryDirectory("sparse-suffix")
        let new = try Self.writePair(in: dir, size: 16 << 20)
        func encode(sparse: Bool) throws -> (length: Int64, encoding: PatchEncoding) {
            try #require(
                try SuffixEncoder.encode(
                    newPath: dir.path("new.bin").path, oldPath: dir.path("old.bin").path, level: 9, sparse: sparse,
                    into: dir.path(sparse ? "sparse" : "dense").path))
        }
        let dense = try encode(sparse: false)
        let sparse = try encode(sparse: true)
        #expect(dense.encoding != .sparseSuffixDelta)
        #expect(sparse.encoding == .sparseSuffixDelta, "dense \(dense.length) B, sparse \(sparse.length) B")
        // 16 MiB of equal bytes are 128 zstd blocks of about 4 bytes each in a differences frame.
        #expect(sparse.length + 300 < dense.length, "dense \(dense.length) B, sparse \(sparse.length) B")
        #expect(try Self.decode(dir.path("sparse"), form: .sparse, in: dir, size: new.count) == new)
        // Read as another form, its four frame lengths do not add up: refused, not a wrong file.
        #expect(throws: PatchError.self) { try Self.decode(dir.path("sparse"), form: .expansion, in: dir, size: new.count) }
    }

    /// A trial another one ruled out stops: asked before its index, each mebibyte of its
    /// scan and before each frame, it throws a `CancellationError` and writes nothing.
    @Test(arguments: [0, 1, 3])
    func aStoppedTrialEndsWithACancellationError(afterAsking times: Int) throws {
        let dir = TemporaryDirectory("suffix-stopped-\(times)")
        _ = try Self.writePair(in: dir, size: 4 << 20)
        let asked = Atomic<Int>(0)
        #expect(throws: CancellationError.self) {
            try SuffixEncoder.encode(
                newPath: dir.path("new.bin").path, oldPath: dir.path("old.bin").path, level: 3, sparse: true,
                stopped: { asked.add(1, ordering: .relaxed).newValue > times }, into: dir.path("p").path)
        }
        #expect(asked.load(ordering: .relaxed) == times + 1)
        #expect(!FileManager.default.fileExists(atPath: dir.path("p").path))
    }

    /// Numbers shifted in every field (a differences frame's own case, bsdiff's): the
    /// sparse form would cost a run per field, so the differences frame is kept.
    @Test func numbersShiftedEverywhereKeepTheDifferencesFrame() throws {
        let dir = TemporaryDirectory("sparse-suffix-dense")
        var generator = SeededGenerator(seed: 5)
        let values = (0..<(1 << 18)).map { _ in UInt32(truncatingIfNeeded: generator.next() % 1_000_000) }
        let old = values.flatMap { withUnsafeBytes(of: $0.littleEndian, Array.init) }
        let new = values.flatMap { withUnsafeBytes(of: ($0 &+ 3).littleEndian, Array.init) }
        try Data(old).write(to: dir.path("old.bin"))
        try Data(new).write(to: dir.path("new.bin"))
        let encoded = try #require(
            try SuffixEncoder.encode(
                newPath: dir.path("new.bin").path, oldPath: dir.path("old.bin").path, level: 9, sparse: true,
                into: dir.path("p").path))
        #expect(encoded.encoding != .sparseSuffixDelta, "\(encoded)")
        let form = try #require(encoded.encoding.suffixForm)
        #expect(try Self.decode(dir.path("p"), form: form, in: dir, size: new.count) == new)
    }

    /// The publisher stops building the sparse form once its replaced bytes pass a cap, so
    /// a file whose every byte changed costs no second copy of its differences.
    @Test func theSparseTrialStopsAtItsCap() {
        let differences = [UInt8](repeating: 1, count: 100_000)
        let new = [UInt8](repeating: 7, count: 100_000)
        var step: [UInt8] = []
        for field in [UInt64(100_000), 0, 0] { withUnsafeBytes(of: field.littleEndian) { step += $0 } }
        func runs(cap: Int) -> (runs: [UInt8], bytes: [UInt8])? {
            differences.withUnsafeBufferPointer { diffs in
                new.withUnsafeBufferPointer { SuffixEncoder.sparseRuns(differences: diffs, controls: step, new: $0, cap: cap) }
            }
        }
        #expect(runs(cap: 1000) == nil)
        let whole = runs(cap: 200_000)
        #expect(whole?.bytes == new && whole?.runs == [0, 0xA0, 0x8D, 0x06], "\(String(describing: whole?.runs))")
    }

    /// Through the publisher and the applier: a raw file with scattered edits gets the
    /// sparse form, applied streamed (a small file) and in place (from
    /// ``PatchRun/inPlaceSuffixSize`` on), byte for byte.
    @Test(arguments: [2 << 20, 10 << 20])
    func aPatchCarriesItAndAppliesIt(size: Int) async throws {
        let dir = TemporaryDirectory("sparse-suffix-patch")
        let (old, new) = LargeFixtures.gazetteerPair(size: size, overwrites: 10, insertions: 2, seed: 7)
        for (folder, bytes) in [("old", old), ("new", new)] {
            try FileManager.default.createDirectory(at: dir.path(folder), withIntermediateDirectories: true)
            try Data(bytes).write(to: dir.path("\(folder)/places.csv"))
        }
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path("p"), options: PatchOptions(level: 9))
        }
        let file = try #require(stats.file("places.csv"))
        #expect(file.encoding == .sparseSuffixDelta, "\(file.tried)")
        _ = try await RawThread.value { try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out")) }
        #expect(try Data(contentsOf: dir.path("out/places.csv")) == Data(new))
    }

    /// A sparse payload of one step adding `old.bin`'s 64 bytes, with `runs` and
    /// `replaced` as its runs and replaced-bytes frames.
    static func payload(runs: [UInt8], replaced: [UInt8]) throws -> [UInt8] {
        var step: [UInt8] = []
        for field in [UInt64(64), 0, 0] { withUnsafeBytes(of: field.littleEndian) { step += $0 } }
        let frames = try [step, runs, replaced, []].map { try ZstdFrame.compress($0, level: 3, checksum: false) }
        var out: [UInt8] = [0]
        for frame in frames { withUnsafeBytes(of: UInt64(frame.count).littleEndian) { out += $0 } }
        return out + frames.flatMap { $0 }
    }

    /// Runs a hostile payload may declare: each is refused with an error naming the file,
    /// never a trap, an overflow or a wrong file; the honest one beside them decodes.
    @Test func hostileRunsAreRefusedNamingTheFile() throws {
        let dir = TemporaryDirectory("sparse-suffix-hostile")
        let old = [UInt8](repeating: 0x61, count: 64)
        try Data(old).write(to: dir.path("old.bin"))
        func decode(runs: [UInt8], replaced: [UInt8]) throws -> [UInt8] {
            try Data(try Self.payload(runs: runs, replaced: replaced)).write(to: dir.path("p"))
            return try Self.decode(dir.path("p"), form: .sparse, in: dir, size: old.count)
        }
        // Keep 2, replace 3, keep the rest.
        var expected = old
        expected[2...4] = [1, 2, 3]
        #expect(try decode(runs: [2, 3], replaced: [1, 2, 3]) == expected)
        let cases: [(String, [UInt8], [UInt8])] = [
            ("a replaced run of no bytes", [2, 0], []),
            ("a run past the file's size", [0x80, 0x80, 0x80, 0x80, 0x01, 1], [9]),
            ("a varint of eleven bytes", [UInt8](repeating: 0xFF, count: 11), []),
            ("replacing more bytes than the steps add", [60, 10], [UInt8](repeating: 7, count: 10)),
            ("a run after the last add byte", [64, 1], [7]),
            ("fewer replaced bytes than the runs declare", [0, 8], [1, 2, 3]),
            ("more replaced bytes than the runs declare", [0, 2], [1, 2, 3]),
            ("a pair cut in half", [2], []),
        ]
        for (name, runs, replaced) in cases {
            #expect("\(name)") {
                _ = try decode(runs: runs, replaced: replaced)
            } throws: { error in
                error is PatchError && "\(error)".contains("places.csv")
            }
        }
    }
}
