import Foundation
import MapDelta
import MapModel
import MapPlatform
import Synchronization

/// A changed file's chosen payload, made on a thread of its own, and how to write it into
/// the patch in the new tree's order.
struct Chosen {
    /// The winning payload (its file is in the patch's work folder, or the new file itself).
    var choice: PayloadChooser.Choice
    /// Bytes of the old file a client rewrites where it builds the file in a clone of it.
    var changedInPlace: Int64?
    /// Whether the payload's file is the chooser's, in the work folder (not the new file
    /// itself), removed once appended.
    var owned = false
    /// The files its cross-file delta may read, the base last: the pending item's, less those
    /// the chooser found redundant (``PayloadChooser/usefulReferences(newPath:newSize:paths:)``).
    var references: [PatchBuilder.Reference] = []

    /// The payloads of `pending`, chosen on up to ``PatchOptions/fileJobs`` threads, each
    /// file with its own chooser and scratch folder under `work`. Each file's trials read
    /// only its own files and references, so the payloads are the same whatever the number
    /// of threads; a large encode's memory is bounded across them
    /// (``PayloadChooser/largeEncodes``). The first failure (by file order) is thrown, and
    /// stops the threads from starting another file.
    ///
    /// The threads take the files largest first, as a file's trials take time growing
    /// with its size: in tree order a gazetteer's largest cut (74 of 187 MB) came third, and
    /// its trials ran on one thread long after the other's had ended.
    static func payloads(
        of pending: [PatchBuilder.Pending], old: TreeScan, new: TreeScan, options: PatchOptions, work: String
    ) throws -> [Chosen] {
        let results = Mutex<[Int: Result<Chosen, any Error>]>([:])
        let failed = Atomic<Bool>(false)
        let next = Atomic<Int>(0)
        let order = largestFirst(pending.map(\.file.size))
        DispatchQueue.concurrentPerform(iterations: max(1, min(options.fileJobs, pending.count))) { _ in
            while !failed.load(ordering: .relaxed) {
                let taken = next.add(1, ordering: .relaxed).oldValue
                guard taken < order.count else { return }
                let index = order[taken]
                let result = Result { try Chosen(pending[index], number: index, old: old, new: new, options: options, work: work) }
                if case .failure = result { failed.store(true, ordering: .relaxed) }
                results.withLock { $0[index] = result }
            }
        }
        let finished = results.withLock { $0 }
        if let failure = finished.sorted(by: { $0.key < $1.key }).lazy.compactMap({ entry -> (any Error)? in
            if case .failure(let error) = entry.value { error } else { nil }
        }).first {
            throw failure
        }
        return try pending.indices.map { try finished[$0]!.get() }
    }

    /// The indices of `sizes`, largest first (and in order among equal sizes).
    static func largestFirst(_ sizes: [Int64]) -> [Int] {
        sizes.indices.sorted { (sizes[$1], $0) < (sizes[$0], $1) }
    }

    /// Chooses the payload of `item` in a folder of its own under `work` and keeps the
    /// winner as `payload-<number>` there; the trials' other files are removed.
    private init(
        _ item: PatchBuilder.Pending, number: Int, old: TreeScan, new: TreeScan, options: PatchOptions, work: String
    ) throws {
        let folder = work + "/file-\(number)"
        try FileSystem.makeDirectory(folder)
        defer { _ = FileSystem.removeTree(URL(fileURLWithPath: folder)) }
        let chooser = try PayloadChooser(options: options, workDirectory: folder)
        // The header's indices are written once the source table is known (`append`); its
        // length, which the trials weigh, does not depend on them.
        let (kept, referenceNote) = chooser.usefulReferences(
            newPath: new.fullPath(item.file), newSize: item.file.size, paths: item.references.map(\.path), names: item.references.map(\.name))
        references = kept.map { item.references[$0] }
        let cross =
            references.isEmpty
            ? nil
            : PayloadChooser.Cross(
                header: CrossReferences(references: references.map { _ in .new(0) }).encoded, paths: references.map(\.path))
        choice = try chooser.choose(
            newPath: new.fullPath(item.file), newSize: item.file.size, basePath: item.base.map(old.fullPath), cross: cross)
        if let referenceNote { choice.notes.append(referenceNote) }
        if choice.payloadPath.hasPrefix(folder + "/") {
            let kept = work + "/payload-\(number)"
            try FileSystem.rename(choice.payloadPath, kept)
            choice.payloadPath = kept
            owned = true
        }
        // Built in a clone of the old file on the client, writing the windows that changed.
        let inPlace =
            choice.encoding == .segmentedDelta
            || (choice.encoding.isSuffix && item.file.size >= PatchRun.inPlaceSuffixSize)
        if inPlace, let base = item.base, let oldFile = try MappedFile(path: old.fullPath(base)),
            let newFile = try MappedFile(path: new.fullPath(item.file))
        {
            changedInPlace = PatchStats.changedInPlace(old: oldFile.bytes, new: newFile.bytes)
        }
    }

    /// Appends the payload to `spool` (a cross-file delta's header with the indices `plan`'s
    /// source table gives its references, which join it in the order a single-threaded
    /// build adds them) and removes its file if the chooser made it; fills in `entry` and
    /// returns the file's origin.
    func append(
        _ item: PatchBuilder.Pending, to spool: SystemFile, plan: inout PlanState, entry: inout PatchStats.File
    ) throws -> PatchManifest.Origin {
        let header = references.isEmpty ? [] : CrossReferences(references: references.map { $0.header(&plan) }).encoded
        if choice.crossHeader > 0 {
            guard header.count == choice.crossHeader else {
                throw PatchBuildError.codec(path: item.file.path, message: "the cross-file references changed while the patch was built")
            }
            try header.withUnsafeBytes { try spool.writeAll($0) }
        }
        try Self.append(
            choice.payloadPath, from: Int64(choice.crossHeader), length: choice.length - Int64(choice.crossHeader), to: spool)
        entry.codecs = try PatchCodecs.needed(byPayload: choice.payloadPath, encoding: choice.encoding)
        if owned { FileSystem.remove(choice.payloadPath) }
        let payload = PatchManifest.Payload(encoding: choice.encoding, length: choice.length)
        let origin: PatchManifest.Origin
        if choice.encoding.isDelta, let base = item.base {
            origin = .patch(source: plan.sourceIndex(base), payload)
            entry.operation = .patch
        } else {
            origin = .add(payload)
            entry.operation = .add
        }
        (entry.source, entry.scratchBytes, entry.changedInPlace) = (item.base?.path, choice.scratchBytes, changedInPlace)
        (entry.encoding, entry.payloadBytes, entry.tried, entry.notes) = (choice.encoding, choice.length, choice.tried, choice.notes)
        entry.seconds = choice.seconds
        return origin
    }

    /// Appends exactly `length` bytes of the file at `path`, from `offset`, to `spool`.
    private static func append(_ path: String, from offset: Int64, length: Int64, to spool: SystemFile) throws {
        let input = try SystemFile.openForReading(path)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var copied: Int64 = 0
        while copied < length {
            let n = try input.readChunk(
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Int(min(Int64(buffer.count), length - copied))]),
                at: offset + copied)
            guard n > 0 else { throw PatchBuildError.fileChanged(path: path) }
            try spool.writeAll(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            copied += Int64(n)
        }
    }
}
