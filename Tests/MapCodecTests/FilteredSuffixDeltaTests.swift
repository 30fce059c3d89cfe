import Foundation
import MapDelta
import MapPlatform
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// The suffix-array codec with filtered extra bytes: new coordinates (a boundary redrawn)
/// travel as differences from the field before them, which compress far better than the
/// numbers themselves.
@Suite struct FilteredSuffixDeltaTests {
    /// A boundary as little-endian Int32 (x, y) pairs along a random walk. `revision` 2
    /// redraws 50,000 points in the middle (400 kB of new numbers, over the decoder's
    /// 256 KiB buffer, so differences cross its chunks), nudges every 997th point and
    /// inserts a few 1–7 byte runs (extra steps shorter than the stride).
    static func writeBoundary(_ file: URL, revision: Int) throws {
        var rng = SeededGenerator(seed: 41)
        var redraw = SeededGenerator(seed: 77)
        var bytes: [UInt8] = []
        var x: Int32 = 1_234_567
        var y: Int32 = -7_654_321
        var rx: Int32 = 0
        var ry: Int32 = 0
        for index in 0..<200_000 {
            x &+= Int32(truncatingIfNeeded: rng.next() % 2001) &- 1000
            y &+= Int32(truncatingIfNeeded: rng.next() % 2001) &- 1000
            var (px, py) = (x, y)
            if revision == 2 {
                if (80_000..<130_000).contains(index) {
                    if index == 80_000 { (rx, ry) = (x, y) }
                    rx &+= Int32(truncatingIfNeeded: redraw.next() % 601) &- 300
                    ry &+= Int32(truncatingIfNeeded: redraw.next() % 601) &- 300
                    (px, py) = (rx, ry)
                } else if index % 997 == 0 {
                    px &+= 13
                }
                if index % 20_011 == 5 { bytes += Array(repeating: UInt8(index % 251), count: 1 + index % 7) }
            }
            withUnsafeBytes(of: px.littleEndian) { bytes += $0 }
            withUnsafeBytes(of: py.littleEndian) { bytes += $0 }
        }
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: file)
    }

    @Test func redrawnCoordinatesTravelFilteredAndApplyByteForByte() async throws {
        let dir = TemporaryDirectory("filtered")
        try Self.writeBoundary(dir.path("old/boundary.bin"), revision: 1)
        try Self.writeBoundary(dir.path("new/boundary.bin"), revision: 2)
        let stats = try await RawThread.value {
            try PatchBuilder.build(from: dir.path("old"), to: dir.path("new"), output: dir.path("p"), options: PatchOptions(level: 9))
        }
        let file = try #require(stats.file("boundary.bin"))
        #expect(file.encoding == .filteredSuffixDelta, "tried \(file.tried)")
        // The same steps with the extra bytes as they are.
        let unfiltered = try #require(
            try SuffixEncoder.encode(
                newPath: dir.path("new/boundary.bin").path, oldPath: dir.path("old/boundary.bin").path, level: 9, strides: [0],
                into: dir.path("unfiltered").path))
        #expect(unfiltered.encoding == .suffixDelta)
        #expect(file.payloadBytes * 4 < unfiltered.length * 3, "filtered \(file.payloadBytes) B, unfiltered \(unfiltered.length) B")
        _ = try await RawThread.value { try PatchApplier.apply(patch: dir.path("p"), oldTree: dir.path("old"), into: dir.path("out")) }
        #expect(try Data(contentsOf: dir.path("out/boundary.bin")) == Data(contentsOf: dir.path("new/boundary.bin")))
    }

    /// Every stride a payload may name decodes to the new file; a stride byte out of
    /// range is refused naming the file, before any step is read.
    @Test func everyStrideRoundTripsAndAnUnknownStrideIsRefused() throws {
        let dir = TemporaryDirectory("filtered")
        try Self.writeBoundary(dir.path("old.bin"), revision: 1)
        try Self.writeBoundary(dir.path("new.bin"), revision: 2)
        let old = try MappedFile.source(dir.path("old.bin").path, displayPath: "old.bin")
        let expected = try Data(contentsOf: dir.path("new.bin"))
        func decode(_ payload: String, form: SuffixDelta.Form) throws -> Data {
            let file = try SystemFile.openForReading(payload)
            var out = Data()
            try SuffixDelta.decode(
                from: file, offset: 0, length: try file.size(), old: old.bytes, targetSize: Int64(expected.count),
                displayPath: "boundary.bin", form: form
            ) { out.append(contentsOf: $0) }
            return out
        }
        for stride in [1, 2, 3, 4, 8] {
            let payload = dir.path("p\(stride)").path
            let encoded = try #require(
                try SuffixEncoder.encode(
                    newPath: dir.path("new.bin").path, oldPath: dir.path("old.bin").path, level: 3, strides: [stride], into: payload))
            #expect(encoded.encoding == .filteredSuffixDelta)
            #expect(try decode(payload, form: .filtered) == expected, "stride \(stride)")
        }
        // Stride 0 stands for no filter where the stride byte is always written (a
        // see-through expansion).
        let unfiltered = dir.path("p0").path
        let plain = try #require(
            try SuffixEncoder.encode(
                newPath: dir.path("new.bin").path, oldPath: dir.path("old.bin").path, level: 3, strides: [0],
                strideByteAlways: true, into: unfiltered))
        #expect(plain.encoding == .filteredSuffixDelta)
        #expect(try Data(contentsOf: dir.path("p0")).first == 0)
        #expect(try decode(unfiltered, form: .expansion) == expected, "stride 0")
        var bytes = try Data(contentsOf: dir.path("p4"))
        // A filtered-suffix-delta payload names a stride of 1…8: 0 there is refused too.
        for stride: UInt8 in [0, 9, 255] {
            bytes[0] = stride
            try bytes.write(to: dir.path("bad"))
            #expect {
                try decode(dir.path("bad").path, form: .filtered)
            } throws: { error in
                "\(error)".contains("boundary.bin") && "\(error)".contains("stride of \(stride)")
            }
        }
        // Read unfiltered, the stride byte shifts the header: refused, not a wrong file.
        #expect(throws: PatchError.self) { try decode(dir.path("p4").path, form: .plain) }
    }

    /// Frames whose result a SHA-256 pin checks carry no zstd checksum (4 bytes each that
    /// a small update would pay for nothing): a suffix delta's three streams and a patch
    /// container's manifest. They still decode, as the round trips above show.
    @Test func framesThatAPinChecksCarryNoChecksum() throws {
        let dir = TemporaryDirectory("unchecked")
        try Self.writeBoundary(dir.path("old.bin"), revision: 1)
        try Self.writeBoundary(dir.path("new.bin"), revision: 2)
        let payload = dir.path("p").path
        _ = try #require(
            try SuffixEncoder.encode(newPath: dir.path("new.bin").path, oldPath: dir.path("old.bin").path, level: 3, strides: [4], into: payload))
        let bytes = [UInt8](try Data(contentsOf: dir.path("p")))
        // A stride byte, three frame lengths (u64 LE), then the frames.
        var offset = 1 + 24
        for index in 0..<3 {
            let length = (0..<8).reduce(0) { $0 | Int(bytes[1 + index * 8 + $1]) << (8 * $1) }
            // Frame_Header_Descriptor (after the 4-byte magic): bit 2 is Content_Checksum_flag.
            #expect(bytes[offset + 4] & 0x04 == 0, "stream \(index)")
            offset += length
        }
        #expect(offset == bytes.count)
        let manifest = try PatchContainerWriter.compressManifest(Array(repeating: 7, count: 300), level: 3)
        #expect(manifest[4] & 0x04 == 0)
        // Other frames keep it.
        #expect(try ZstdFrame.compress(Array(repeating: 7, count: 300), level: 3)[4] & 0x04 != 0)
    }

    /// A target size from a hostile patch (a see-through recipe's expanded size may be any
    /// number) is an error, not an overflow trap, in every form.
    @Test func theLargestTargetSizeIsRefusedNotATrap() throws {
        let dir = TemporaryDirectory("suffix-huge")
        // One step that adds and copies nothing, and empty difference and extra streams.
        let frames = [
            try ZstdFrame.compress([UInt8](repeating: 0, count: 24), level: 3), try ZstdFrame.compress([], level: 3),
            try ZstdFrame.compress([], level: 3),
        ]
        var body: [UInt8] = []
        for frame in frames { withUnsafeBytes(of: UInt64(frame.count).littleEndian) { body += $0 } }
        for frame in frames { body += frame }
        let forms: [(String, [UInt8], SuffixDelta.Form)] = [("plain", [], .plain), ("filtered", [4], .filtered), ("always", [0], .expansion)]
        for (name, prefix, form) in forms {
            try Data(prefix + body).write(to: dir.path(name))
            let file = try SystemFile.openForReading(dir.path(name).path)
            #expect(throws: PatchError.self, "\(name)") {
                try SuffixDelta.decode(
                    from: file, offset: 0, length: try file.size(), old: UnsafeRawBufferPointer(start: nil, count: 0),
                    targetSize: .max, displayPath: "huge.bin", form: form, output: { _ in })
            }
        }
    }
}
