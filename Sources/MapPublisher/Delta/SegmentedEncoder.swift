import Foundation
import MapDelta
import MapModel
import MapPlatform
import Synchronization

/// Writes a ``SegmentedDelta`` of a large file: the new file cut into segments of
/// `segmentLength` bytes, each encoded as one zstd frame against the window of the old
/// file where that part most likely came from (the same relative position, widened by
/// `margin` on both sides). Segments are independent, so they are encoded on `jobs`
/// threads at once; each encoder's memory depends on the segment and window sizes, not
/// on the file's size, and so does the decoder's.
package struct SegmentedEncoder {
    /// Bytes of new file per segment (the decoder buffers one segment).
    let segmentLength: Int64
    /// Bytes of old file before and after each segment's position in its window.
    let margin: Int64
    /// The zstd level.
    let level: Int
    /// Segments encoded at once.
    let jobs: Int
    /// Where the segments' frames are written before they are joined.
    let workDirectory: String

    /// An encoder with every setting given.
    package init(segmentLength: Int64, margin: Int64, level: Int, jobs: Int, workDirectory: String) {
        self.segmentLength = segmentLength
        self.margin = margin
        self.level = level
        self.jobs = jobs
        self.workDirectory = workDirectory
    }

    /// Encodes `newPath` against the file `oldPath` into `output` and returns the
    /// payload's length.
    func encode(newPath: String, oldPath: String, into output: String) throws -> Int64 {
        try encode(newPath: newPath, oldPaths: [oldPath], into: output)
    }

    /// Encodes `newPath` against the files `oldPaths` (one after another; the last is the
    /// file's own old version, where a segment with no anchor found takes the window at
    /// its relative position) into `output` and returns the payload's length. Each
    /// window lies inside one old file. Each thread maps the files itself (the pages are
    /// shared).
    func encode(newPath: String, oldPaths: [String], into output: String) throws -> Int64 {
        let input = try SystemFile.openForReading(newPath)
        let newSize = try input.size()
        let oldSizes = try oldPaths.map { try SystemFile.openForReading($0).size() }
        let count = Int(max(1, (newSize + segmentLength - 1) / segmentLength))
        // Each segment's window is where its content is found in the old files (anchors),
        // else at the same relative position in the last one.
        let mappings = try oldPaths.map { try MappedFile.source($0, displayPath: $0) }
        let windows = withExtendedLifetime(mappings) { SegmentWindows(old: mappings.map(\.bytes)) }
        let results = Mutex<[Int: Result<SegmentedDelta.Segment, any Error>]>([:])
        let next = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: max(1, min(jobs, count))) { _ in
            guard let compressor = try? ZstdCompressor(),
                let old = try? oldPaths.map({ try MappedFile.source($0, displayPath: $0) }),
                old.map({ Int64($0.bytes.count) }) == oldSizes,
                let new = try? MappedFile.source(newPath, displayPath: newPath)
            else { return }
            while true {
                let index = next.add(1, ordering: .relaxed).oldValue
                guard index < count, results.withLock({ !$0.values.contains { if case .failure = $0 { true } else { false } } })
                else { return }
                let result = Result {
                    try encodeSegment(
                        index, of: newSize, from: input, new: new.bytes, old: old.map(\.bytes), windows: windows,
                        compressor: compressor)
                }
                results.withLock { $0[index] = result }
            }
        }
        let finished = results.withLock { $0 }
        var segments: [SegmentedDelta.Segment] = []
        for index in 0..<count {
            guard let result = finished[index] else {
                throw PatchBuildError.codec(
                    path: newPath, message: "cannot create a compression context or map \(oldPaths.joined(separator: ", "))")
            }
            segments.append(try result.get())
        }
        let table = SegmentedDelta(segments: segments)
        guard table.newSize == newSize else { throw PatchBuildError.fileChanged(path: newPath) }
        let out = try SystemFile.createOrTruncate(output)
        try table.encoded.withUnsafeBytes { try out.writeAll($0) }
        for index in 0..<count {
            let frame = framePath(index)
            try SystemFile.openForReading(frame).forEachChunk { try out.writeAll($0) }
            FileSystem.remove(frame)
        }
        return try out.size()
    }

    private func framePath(_ index: Int) -> String { workDirectory + "/segment-\(index).zst" }

    /// Encodes segment `index` into its frame file; its window lies in one of `old`, its
    /// offset counted over all of them one after another.
    private func encodeSegment(
        _ index: Int, of newSize: Int64, from input: SystemFile, new: UnsafeRawBufferPointer, old: [UnsafeRawBufferPointer],
        windows: SegmentWindows, compressor: ZstdCompressor
    ) throws -> SegmentedDelta.Segment {
        let start = Int64(index) * segmentLength
        let length = min(segmentLength, newSize - start)
        let wanted = length + 2 * margin
        var file = old.count - 1
        let offset: Int64
        if Int64(new.count) == newSize,
            let found = windows.window(for: UnsafeRawBufferPointer(rebasing: new[Int(start)..<Int(start + length)]), length: wanted)
        {
            (file, offset) = found
        } else {
            // The old bytes at the same relative position, widened by the margin both ways.
            let oldSize = Int64(old[file].count)
            let center = newSize == 0 ? 0 : Int64((Double(start) / Double(newSize) * Double(oldSize)).rounded(.down))
            offset = min(max(0, center - margin), oldSize)
        }
        let oldLength = min(Int64(old[file].count) - offset, wanted)
        let oldOffset = windows.starts[file] + offset
        let window =
            oldLength == 0
            ? nil
            : UnsafeRawBufferPointer(rebasing: old[file][Int(offset)..<Int(offset + oldLength)])
        let frame = try SystemFile.createOrTruncate(framePath(index))
        let (written, sha256) = try compressor.encode(
            input, range: start..<start + length, prefix: window, level: level,
            windowCover: length + oldLength, into: frame)
        return SegmentedDelta.Segment(
            newLength: length, oldOffset: oldOffset, oldLength: oldLength,
            frameLength: written, sha256: sha256)
    }
}
