import Foundation
import MapDelta
import MapModel
import MapPlatform

/// Files above the segment threshold: a segmented delta, the whole-file suffix-array delta
/// that can rule it out, or a see-through delta.
extension PayloadChooser {
    /// For a file above the threshold: a segmented delta, or a see-through delta (its
    /// expansion segmented, or one frame or a suffix delta up to 256 MiB) when smaller, else
    /// the file stored. Segments are encoding passes of bounded memory; the whole-file
    /// trials beside them take memory growing with the file up to their limits.
    /// `crossFirst`, where the caller has one, makes a cross-file frame first, a rival that
    /// can rule out the segments as the suffix-array delta can
    /// (``chooseSingle(newPath:newSize:basePath:crossFirst:)``).
    func chooseSegmented(
        newPath: String, newSize: Int64, basePath: String, encoder: SegmentedEncoder, crossFirst: FrameMaker? = nil
    ) throws -> Choice {
        var choice = Choice(encoding: .stored, payloadPath: newPath, length: newSize, tried: [.stored: newSize])
        guard (FileStatus.of(basePath)?.size ?? 0) > 0 else {
            choice.notes = [PayloadNote(.noDelta, "no delta: old file is empty")]
            return choice
        }
        try trySeeThrough(newPath, basePath: basePath, into: &choice)
        if seeThroughSuffices(&choice, newSize: newSize) { return choice }
        if byteLevelRulesOut(&choice, newPath: newPath, newSize: newSize, basePath: basePath) { return choice }
        // The suffix-array delta of the whole file: its decoder holds three stream decoders
        // and the mapped old file whatever the size, so it needs no segments; its matches
        // reach the whole old file, and an edit costs its own bytes and a step, not the
        // bytes until zstd's long-distance matcher finds the next match. It comes first,
        // after a cross-file frame where there is one: where the smaller of the two is far
        // below a fast delta, the segments are not made (a 74 MB gazetteer cut: its frame
        // 231 kB in 80 s, its segments 1.20 MB in 76 s).
        let (frame, job) = try frameThenSuffix(
            newPath, size: newSize, basePath: basePath, limit: wholeRawFileSuffixLimit, crossFirst: crossFirst)
        if let note = frame?.baseOnlyNote { choice.notes.append(PayloadNote(.trial, note)) }
        let suffix = try job?.wait()
        let suffixSeconds = job?.seconds ?? 0
        var rival = suffix.map { (length: $0.length, name: "the suffix-array delta") }
        if let frame, frame.length < rival?.length ?? .max { rival = (frame.length, "the cross-file frame") }
        if let rival, let skipped = try segmentsRuledOut(by: rival.length, rivalName: rival.name, newPath: newPath, basePath: basePath) {
            if let suffix {
                choice.record(suffix.encoding, suffix.length, seconds: suffixSeconds)
                if suffix.length < choice.length { keep(suffix, in: &choice) }
            }
            choice.notes.append(PayloadNote(.trial, skipped))
            return choice
        }
        let path = workDirectory + "/segmented.payload"
        let (length, seconds) = try Elapsed.measure { try encoder.encode(newPath: newPath, oldPath: basePath, into: path) }
        choice.record(.segmentedDelta, length, seconds: seconds)
        if length < choice.length {
            (choice.encoding, choice.payloadPath, choice.length) = (.segmentedDelta, path, length)
        } else {
            choice.notes.append(
                PayloadNote(.trial, "segmented delta (\(length) B) not smaller than \(choice.encoding) (\(choice.length) B)"))
        }
        if let suffix {
            choice.record(suffix.encoding, suffix.length, seconds: suffixSeconds)
            if suffix.length < choice.length { keep(suffix, in: &choice) }
        }
        return choice
    }
}
