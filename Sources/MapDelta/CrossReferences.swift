import Foundation
import MapModel
package import MapPlatform

/// The files a cross-file delta reads besides nothing else: the zstd frame's prefix is
/// their bytes concatenated in this order. Map folders repeat themselves (one record in a
/// gazetteer cut at several population thresholds, one polygon at two resolutions), so a
/// change that shows up in several files of a group is paid once: the later files refer
/// to the new files already produced by the same patch, and to the other old files.
///
/// Payload layout: `u32 count`, then per reference `u8 kind (0: old file, an index into
/// the sources; 1: new file, an index into the targets, already produced), u32 index`,
/// then one zstd frame.
package struct CrossReferences: Sendable, Equatable {
    /// One referenced file.
    package enum Reference: Sendable, Equatable {
        /// An old file (index into ``PatchManifest/sources``).
        case old(Int)
        /// A new file produced earlier by the same patch (index into ``PatchManifest/targets``).
        case new(Int)
    }

    /// The references, in prefix order (the most similar file last, nearest the data).
    package var references: [Reference]

    /// References in this order.
    package init(references: [Reference]) {
        self.references = references
    }

    /// At most this many references a reader accepts.
    package static let maxReferences = 16
    /// The most bytes the references may hold together (the publisher stays within 64 MiB
    /// plus the base, which is at most 16 MiB for a file that gets references).
    package static let maxPrefixBytes: Int64 = 128 << 20
    /// The most bytes the references of a ``PatchEncoding/wholeCrossDelta`` may hold
    /// together: joined on disk beside the new tree while the file decodes, and with the
    /// file (at most 256 MiB) within zstd's largest window (2 GiB).
    package static let maxWholePrefixBytes: Int64 = 1 << 30
    /// The largest file a ``PatchEncoding/wholeCrossDelta`` may produce: a client that
    /// cannot map the file streams the frame with a window as large as the file on its heap.
    package static let maxWholeFileBytes: Int64 = 256 << 20

    /// The encoded header, written before the frame.
    package var encoded: [UInt8] {
        var out: [UInt8] = withUnsafeBytes(of: UInt32(references.count).littleEndian, Array.init)
        for reference in references {
            switch reference {
            case .old(let index):
                out.append(0)
                out += withUnsafeBytes(of: UInt32(index).littleEndian, Array.init)
            case .new(let index):
                out.append(1)
                out += withUnsafeBytes(of: UInt32(index).littleEndian, Array.init)
            }
        }
        return out
    }

    /// Reads the header at `offset` of a payload of `length` bytes; returns it and its length.
    package static func decode(
        from file: SystemFile, at offset: Int64, within length: Int64,
        displayPath: String
    ) throws -> (CrossReferences, Int64) {
        func corrupt(_ detail: String) -> PatchError { .corrupt(detail: "references of \(displayPath): \(detail)") }
        var head = [UInt8](repeating: 0, count: 4)
        guard length >= 4, try head.withUnsafeMutableBytes({ try file.readChunk(into: $0, at: offset) }) == 4 else {
            throw PatchError.truncated(detail: "references of \(displayPath)")
        }
        var reader = ByteReader(head)
        let count = Int(try reader.u32())
        let headerLength = 4 + Int64(count) * 5
        guard (1...maxReferences).contains(count), headerLength < length else { throw corrupt("invalid count") }
        var table = [UInt8](repeating: 0, count: count * 5)
        guard try table.withUnsafeMutableBytes({ try file.readChunk(into: $0, at: offset + 4) }) == table.count else {
            throw PatchError.truncated(detail: "references of \(displayPath)")
        }
        reader = ByteReader(table)
        var references: [Reference] = []
        for _ in 0..<count {
            let kind = try reader.byte()
            let index = Int(try reader.u32())
            switch kind {
            case 0: references.append(.old(index))
            case 1: references.append(.new(index))
            default: throw corrupt("unknown kind \(kind)")
            }
        }
        return (CrossReferences(references: references), headerLength)
    }
}
