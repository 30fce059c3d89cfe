import MapPlatform

/// The add bytes of a suffix delta: the old file's bytes plus a frame of differences, or
/// (the sparse form) the old file's bytes with replaced spans (``SuffixDelta/Form/sparse``).
extension SuffixDelta {
    /// Where a step's add bytes come from beside the old file.
    enum AddBytes {
        /// One frame of byte differences from the old file.
        case differences(FrameReader)
        /// Runs of kept and replaced bytes, and the replaced bytes.
        case replaced(Replacements)

        /// Fills `chunk` with the next add bytes, `old` holding the old file from where
        /// they start.
        func fill(_ chunk: UnsafeMutableRawBufferPointer, old: UnsafeRawBufferPointer) throws {
            switch self {
            case .differences(let differences):
                _ = try differences.read(into: chunk, allowEnd: false)
                addBytes(into: chunk, from: old)
            case .replaced(let replacements):
                try replacements.fill(chunk, old: old)
            }
        }

        /// Whether every frame was read to its end, and no run declares more bytes.
        func atEnd() throws -> Bool {
            switch self {
            case .differences(let differences): return try differences.atEnd()
            case .replaced(let replacements): return try replacements.atEnd()
            }
        }
    }

    /// The runs frame, (kept, replaced) pairs of LEB128 varints over the add bytes, and the
    /// replaced bytes' frame of a sparse payload. Every value is at most the file's size, a
    /// replaced run at least one byte: a hostile payload cannot overflow a count, and
    /// costs at most one pair per byte of the file.
    final class Replacements {
        private let runs: FrameReader
        private let bytes: FrameReader
        private let limit: Int64
        private let path: String
        /// Old bytes still to keep before the current replaced run.
        private var kept: Int64 = 0
        /// Bytes of the current run still to replace.
        private var replaced: Int64 = 0
        /// Whether the runs frame ended: every further add byte is kept.
        private var ended = false

        init(runs: FrameReader, bytes: FrameReader, limit: Int64, path: String) {
            self.runs = runs
            self.bytes = bytes
            self.limit = limit
            self.path = path
        }

        func fill(_ chunk: UnsafeMutableRawBufferPointer, old: UnsafeRawBufferPointer) throws {
            guard old.count >= chunk.count else { throw corrupt("a step is out of range") }
            chunk.copyMemory(from: UnsafeRawBufferPointer(rebasing: old[0..<chunk.count]))
            var position = 0
            while position < chunk.count {
                if kept == 0 && replaced == 0 && !ended { try nextRun() }
                if ended { return }
                if kept > 0 {
                    let count = Int(min(kept, Int64(chunk.count - position)))
                    position += count
                    kept -= Int64(count)
                    continue
                }
                let count = Int(min(replaced, Int64(chunk.count - position)))
                _ = try bytes.read(into: UnsafeMutableRawBufferPointer(rebasing: chunk[position..<position + count]), allowEnd: false)
                position += count
                replaced -= Int64(count)
            }
        }

        func atEnd() throws -> Bool {
            guard replaced == 0 else { return false }
            guard ended || kept == 0 else { return false }
            if !ended, try !runs.atEnd() { return false }
            return try bytes.atEnd()
        }

        /// Reads the next (kept, replaced) pair; at the end of the frame, keeps the rest.
        private func nextRun() throws {
            guard try !runs.atEnd() else {
                ended = true
                return
            }
            let keep = try length()
            let replace = try length()
            guard keep <= limit, replace >= 1, replace <= limit else { throw corrupt("a run's length is out of range") }
            kept = keep
            replaced = replace
        }

        /// One varint of the runs frame; one that overflows is named with the file.
        private func length() throws -> Int64 {
            do {
                return try ByteReader.varint { try runs.byte() }
            } catch let error as PatchError {
                guard case .corrupt = error else { throw error }
                throw corrupt("a run's length is out of range")
            }
        }

        private func corrupt(_ detail: String) -> PatchError { .corrupt(detail: "suffix delta of \(path): \(detail)") }
    }
}
