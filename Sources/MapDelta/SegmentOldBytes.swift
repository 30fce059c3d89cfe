package import MapPlatform

/// The old bytes a segmented delta's windows address: one file, or several one after
/// another (a cross-file payload's references). A window must lie inside one file.
package struct SegmentOldBytes {
    /// The files, mapped.
    package let files: [MappedFile]
    /// Where each file starts in the sequence.
    package let starts: [Int64]
    /// All the files' bytes together.
    package let size: Int64

    /// The sequence of `files`.
    package init(files: [MappedFile]) {
        self.files = files
        var starts: [Int64] = []
        var size: Int64 = 0
        for file in files {
            starts.append(size)
            size += Int64(file.bytes.count)
        }
        self.starts = starts
        self.size = size
    }

    /// The file holding the window of `segment`, and the window's start in it.
    private func locate(_ segment: SegmentedDelta.Segment) -> (Int, Int64)? {
        guard let index = starts.lastIndex(where: { $0 <= segment.oldOffset }) else { return nil }
        let offset = segment.oldOffset - starts[index]
        guard segment.oldLength <= Int64(files[index].bytes.count) - offset else { return nil }
        return (index, offset)
    }

    /// The window of `segment`; a window across two files is refused.
    package func window(of segment: SegmentedDelta.Segment, displayPath: String) throws -> UnsafeRawBufferPointer {
        guard let (index, offset) = locate(segment) else {
            throw PatchError.corrupt(detail: "segment table of \(displayPath): a window spans two files")
        }
        return UnsafeRawBufferPointer(rebasing: files[index].bytes[Int(offset)..<Int(offset + segment.oldLength)])
    }

    /// Drops the process's pages of the window of `segment` (see ``MappedFile/release(_:)``).
    package func release(_ segment: SegmentedDelta.Segment) {
        guard segment.oldLength > 0, let (index, offset) = locate(segment) else { return }
        files[index].release(Int(offset)..<Int(offset + segment.oldLength))
    }
}
