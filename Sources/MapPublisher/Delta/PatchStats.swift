import Foundation
import MapDelta
import MapModel
import MapPlatform

/// What ``PatchBuilder/build(from:to:output:options:)`` wrote, file by file, and where the
/// bytes of the container went.
package struct PatchStats: Sendable {
    /// The operation chosen for one path.
    package enum Operation: String, Sendable {
        /// Same path, same bytes: hard-linked by the applier.
        case unchanged
        /// Bytes of an old file (moved or duplicated): hard-linked, no payload.
        case copy
        /// New content from a stored or zstd payload.
        case add
        /// A delta against an old file.
        case patch
        /// An old path with no counterpart in the new tree.
        case delete
    }

    /// The decision for one path.
    package struct File: Sendable {
        /// Path in the new tree (in the old tree for ``Operation/delete``).
        package var path: String
        /// The operation recorded in the container.
        package var operation: Operation
        /// Size of the new file.
        package var size: Int64
        /// The old file read: copy source, delta base, or the base a delta was tried against.
        package var source: String?
        /// Encoding of the payload, if any.
        package var encoding: PatchEncoding?
        /// The optional codecs its payload needs (``PatchCodecs/needed(byPayload:encoding:)``).
        package var codecs: [String] = []
        /// Bytes of the payload in the container (0 without payload).
        package var payloadBytes: Int64
        /// Every encoding tried and the payload size it gave (plain zstd is skipped when a
        /// delta is already below 1/64 of the file).
        package var tried: [PatchEncoding: Int64]
        /// Why the obvious choice was not taken (e.g. a delta beyond zstd's window), and
        /// which trials rules or estimates left out (``PayloadChooser/Choice/notes``).
        package var notes: [PayloadNote] = []
        /// The notes as one line (the publish log's); nil for none.
        package var note: String? { PayloadNote.line(notes) }
        /// The notes a client is shown with the patch edge (not the log-only ones); nil for none.
        package var edgeNote: String? { PayloadNote.line(notes.filter { !$0.logOnly }) }
        /// The wall seconds each encoding tried took (``PayloadChooser/Choice/seconds``).
        package var seconds: [PatchEncoding: Double] = [:]

        /// Where the trials' time went, slowest first, for a file whose trials took at
        /// least ``PatchStats/slowTrials`` seconds (the publish log's line); nil for the rest.
        /// "whole-cross-delta 612.4 kB in 45.1 s (kept), delta 640.0 kB in 38.0 s".
        package var trialTimes: String? {
            guard seconds.values.reduce(0, +) >= PatchStats.slowTrials else { return nil }
            return seconds.sorted { ($0.value, $1.key.rawValue) > ($1.value, $0.key.rawValue) }.map { encoding, spent in
                let size = tried[encoding].map { ByteFormat.string($0) } ?? "?"
                return "\(encoding) \(size) in \(String(format: "%.1f", spent)) s" + (encoding == self.encoding ? " (kept)" : "")
            }.joined(separator: ", ")
        }
        /// For a segmented patch: the bytes of the new file that differ from the old file
        /// in place, in windows of ``PatchStats/cloneWindow`` (what a client building the
        /// file as a clone of the old one writes).
        package var changedInPlace: Int64?
        /// Disk the client takes beside the new file while it applies the payload, freed
        /// after it (``PayloadChooser/Choice/scratchBytes``).
        package var scratchBytes: Int64 = 0
    }

    /// The granularity a cloned build allocates in, for the estimate: XFS gives each
    /// copy-on-write write an extent of 128 KiB by default (its `cowextsize`); btrfs and
    /// APFS allocate less, so the estimate errs on the safe side there. (The client compares
    /// and writes in ``SegmentedDelta/cloneWindow``s.)
    package static let cloneWindow = 128 << 10

    /// A file whose trials take this many seconds or more gets a line in the publish log
    /// saying which ones (``File/trialTimes``): where a publish's time goes.
    package static let slowTrials = 10.0

    /// Bytes of `new` that differ from `old` at the same offsets, counted in whole
    /// ``cloneWindow``s (and everything past the old file's end).
    package static func changedInPlace(old: UnsafeRawBufferPointer, new: UnsafeRawBufferPointer) -> Int64 {
        var changed: Int64 = 0
        var offset = 0
        while offset < new.count {
            let length = min(cloneWindow, new.count - offset)
            if offset + length > old.count || memcmp(old.baseAddress! + offset, new.baseAddress! + offset, length) != 0 {
                changed += Int64(length)
            }
            offset += length
        }
        return changed
    }

    /// Disk space the applied patch takes where the data directory can clone files: files
    /// it writes whole, and for large patched files only the windows that changed in place.
    package var cloneWriteBytes: Int64 {
        files.filter { $0.operation == .add || $0.operation == .patch }
            .saturatingSum { ($0.changedInPlace ?? $0.size).plusSaturating(4096) }.plusSaturating(peakScratchBytes)
    }

    /// One entry per target file (sorted by path), then one per deleted path.
    package var files: [File] = []
    /// Size of the whole container.
    package var patchBytes: Int64 = 0
    /// Size of the fixed header.
    package var headerBytes: Int64 = 0
    /// Size of the compressed manifest.
    package var manifestBytes: Int64 = 0
    /// Size of the manifest before compression.
    package var manifestRawBytes: Int64 = 0
    /// The manifest form written (``PatchFormat``): 2 where it is smaller than 1.
    package var manifestForm = PatchFormat.currentForm
    /// Sum of all payloads.
    package var payloadBytes: Int64 = 0
    /// Size of the target tree.
    package var targetBytes: Int64 = 0

    /// How many paths got `operation`.
    /// Disk space the applied patch takes besides the old tree: the files it writes (added
    /// and patched), each with up to one 4 KiB block of slack, and the largest scratch one
    /// of them needs while it is made (files are made one at a time); unchanged and copied
    /// files are hard links.
    package var writeBytes: Int64 {
        files.filter { $0.operation == .add || $0.operation == .patch }.saturatingSum { $0.size.plusSaturating(4096) }
            .plusSaturating(peakScratchBytes)
    }

    /// The largest scratch a file of the patch needs (``File/scratchBytes``).
    package var peakScratchBytes: Int64 { files.map(\.scratchBytes).max() ?? 0 }

    package func count(_ operation: Operation) -> Int {
        files.reduce(0) { $0 + ($1.operation == operation ? 1 : 0) }
    }

    /// The decision for `path` in the new tree (or a deleted old path).
    package func file(_ path: String) -> File? {
        files.first { $0.path == path }
    }
}
