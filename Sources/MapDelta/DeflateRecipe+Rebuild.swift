import Foundation
import MapModel
package import MapPlatform
import Synchronization

/// Rebuilding the compressed file from its expansion, on several threads.
///
/// Segments are independent deflate streams, so small ones (up to
/// ``DeflateRecipe/parallelSegmentLimit`` of content) are deflated ahead on up to
/// `threads` threads, a batch of at most ``DeflateRecipe/batchLimit`` content bytes at a
/// time, and written in order; a larger segment is one stream, which zlib makes again on
/// the calling thread, streamed, unless the publisher proved it in pieces
/// (``DeflatePieces``): then its pieces are deflated `threads` at a time and their bits
/// joined. The bytes are the same for any number of threads. Memory: one batch's (or
/// `threads` pieces') compressed output and zlib's state per thread.
extension DeflateRecipe {
    /// Where a rebuild stands: segments finished, and the expansion and output bytes
    /// behind them. A rebuild can start at any position it reported.
    package struct Position: Codable, Equatable, Sendable {
        /// Segments written, with the raw bytes before each.
        package var segments: Int
        /// Expansion bytes consumed.
        package var expanded: Int64
        /// Rebuilt bytes written.
        package var output: Int64

        /// The start of a file.
        package static let start = Position(segments: 0, expanded: 0, output: 0)

        /// A position with every field given.
        package init(segments: Int, expanded: Int64, output: Int64) {
            self.segments = segments
            self.expanded = expanded
            self.output = output
        }
    }

    /// Segments with more content than this are deflated on the calling thread, streamed.
    package static let parallelSegmentLimit: Int64 = 4 << 20
    /// Content bytes deflated ahead at most (bounds the compressed bytes held).
    package static let batchLimit: Int64 = 32 << 20
    /// Segments deflated ahead at most: a file of a million tiny streams holds a batch of
    /// them at a time, not all of them (memory independent of the stream count).
    package static let batchSegments = 4096

    /// Writes the rebuilt file from `position` on (``Position/start``: the whole file):
    /// raw runs of `expansion` as they are, segments deflated, on up to `threads` threads;
    /// `finished` gets the position after every segment written (and after the tail).
    /// Returns the most deflates that ran at once.
    @discardableResult
    package func rebuild(
        from expansion: SystemFile, threads: Int = 1, at position: Position = .start,
        output: (UnsafeRawBufferPointer) throws -> Void,
        finished: (Position) throws -> Void = { _ in }
    ) throws -> Int {
        guard (0...segments.count).contains(position.segments) else {
            throw PatchError.corrupt(detail: "a rebuild cannot start at segment \(position.segments) of \(segments.count)")
        }
        var at = position
        var peak = 0
        func write(_ index: Int, deflated: [UInt8]?) throws {
            let segment = segments[index]
            try Self.copy(expansion, from: at.expanded, length: segment.rawBefore) {
                try output($0)
                at.output += Int64($0.count)
            }
            at.expanded += segment.rawBefore
            if let deflated {
                try deflated.withUnsafeBytes { try output($0) }
                at.output += Int64(deflated.count)
            } else {
                try segment.codec.rebuild(segment, of: expansion, at: at.expanded, threads: threads) {
                    try output($0)
                    at.output += Int64($0.count)
                }
            }
            at.expanded += segment.expandedLength
            at.segments = index + 1
            try finished(at)
        }
        var index = position.segments
        while index < segments.count {
            var batch = index..<index
            var content: Int64 = 0
            while threads > 1, batch.upperBound < segments.count, batch.count < Self.batchSegments,
                segments[batch.upperBound].expandedLength <= Self.parallelSegmentLimit,
                content + segments[batch.upperBound].expandedLength <= Self.batchLimit
            {
                content += segments[batch.upperBound].expandedLength
                batch = batch.lowerBound..<batch.upperBound + 1
            }
            guard batch.count > 1 else {
                peak = max(peak, 1)
                try write(index, deflated: nil)
                index += 1
                continue
            }
            let (deflated, running) = try deflateAhead(batch, of: expansion, from: at.expanded, threads: threads)
            peak = max(peak, running)
            for (offset, bytes) in deflated.enumerated() { try write(batch.lowerBound + offset, deflated: bytes) }
            index = batch.upperBound
        }
        try Self.copy(expansion, from: at.expanded, length: tail) {
            try output($0)
            at.output += Int64($0.count)
        }
        at.expanded += tail
        try finished(at)
        return peak
    }

    /// Deflates the segments of `batch` (whose raw bytes start at `expanded`) on up to
    /// `threads` threads into memory; returns them in order and the most that ran at once.
    private func deflateAhead(
        _ batch: Range<Int>, of expansion: SystemFile, from expanded: Int64, threads: Int
    ) throws -> ([[UInt8]], Int) {
        var starts: [Int64] = []
        var position = expanded
        for index in batch {
            position += segments[index].rawBefore
            starts.append(position)
            position += segments[index].expandedLength
        }
        let results = Mutex<[Int: Result<[UInt8], any Error>]>([:])
        let next = Atomic<Int>(0)
        let running = Atomic<Int>(0)
        let peak = Atomic<Int>(0)
        let segments = self.segments
        let offsets = starts
        DispatchQueue.concurrentPerform(iterations: min(threads, batch.count)) { _ in
            while true {
                let item = next.add(1, ordering: .relaxed).oldValue
                guard item < batch.count else { return }
                let now = running.add(1, ordering: .relaxed).newValue
                peak.max(now, ordering: .relaxed)
                let result = Result { () throws -> [UInt8] in
                    var bytes: [UInt8] = []
                    let segment = segments[batch.lowerBound + item]
                    try segment.codec.rebuild(segment, of: expansion, at: offsets[item]) { bytes += $0 }
                    return bytes
                }
                running.subtract(1, ordering: .relaxed)
                results.withLock { $0[item] = result }
            }
        }
        let finished = results.withLock { $0 }
        return (try (0..<batch.count).map { try finished[$0]!.get() }, peak.load(ordering: .relaxed))
    }
}
