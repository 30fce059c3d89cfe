import Crypto
package import Foundation
package import MapModel
import MapPlatform
import SystemPackage

/// Unpacks a full archive into an empty folder, refusing anything a map tree cannot hold.
///
/// Entries are read by this library's own tar reader (``TarReader``, over zstd or zlib in
/// ``ArchiveStream``: no libarchive on the client) and written by this type, so the checks
/// are ours and strict: only regular files and
/// folders; no absolute paths, `..`, links, devices or FIFOs; no duplicates; at most the
/// manifest's `files` entries and `unpackedSize` bytes, and its ``TreeLimits/folders``. Files are created with
/// `O_EXCL | O_NOFOLLOW` and hashed while written, so the result is verified against
/// the manifest's tree hash without reading it twice. Memory stays bounded: data moves in
/// 64 KiB blocks.
package enum ArchiveExtractor {
    /// Why an archive was refused.
    package struct Refusal: Error, CustomStringConvertible {
        /// One line: which entry and why.
        package let description: String

        /// A tree of more folders than `limit` (``TreeLimits/folders``).
        static func folders(beyond limit: Int) -> Refusal {
            Refusal(description: "more than the \(limit) folders a tree of the files the manifest declares can hold")
        }
    }

    /// Extracts `archive` into `destination` (which must exist and be empty) and returns
    /// every file written with its hash, sorted by path.
    /// - Parameters:
    ///   - progress: called with unpacked bytes written so far.
    ///   - isCancelled: polled between blocks; `true` stops with `CancellationError`.
    package static func extract(
        _ archive: URL, into destination: URL, limits: TreeLimits,
        progress: (Int64) -> Void = { _ in }, isCancelled: () -> Bool = { false }
    ) throws -> [FileEntry] {
        try extract(archive, into: destination, limits: limits, leavingOut: [:], progress: progress, isCancelled: isCancelled).files
    }

    /// What ``extract(_:into:limits:leavingOut:progress:isCancelled:)`` unpacked.
    package struct Extraction: Sendable {
        /// Every file of the archive with its hash, sorted by path, written or left out.
        package var files: [FileEntry]
        /// The files not written because `leavingOut` named the same bytes at their path.
        package var leftOut: Set<PathKey>
    }

    /// The largest file held in memory to learn whether it matches a file of `leavingOut`;
    /// a larger one is written whatever it holds.
    package static let leaveOutLimit = 4 << 20

    /// Extracts `archive` as ``extract(_:into:limits:progress:isCancelled:)`` does, except
    /// that a file whose path, size and SHA-256 equal an entry of `same` is hashed and not
    /// written (up to ``leaveOutLimit`` bytes): a publisher diffing against an old version
    /// needs only the files that changed on disk, and creating a file is what costs there.
    package static func extract(
        _ archive: URL, into destination: URL, limits: TreeLimits, leavingOut same: [PathKey: FileEntry],
        progress: (Int64) -> Void = { _ in }, isCancelled: () -> Bool = { false }
    ) throws -> Extraction {
        try extract(
            ArchiveStream(path: archive.path), into: destination, limits: limits, leavingOut: same, progress: progress,
            isCancelled: isCancelled)
    }

    /// Extracts the tar in `stream` (``extract(_:into:limits:leavingOut:progress:isCancelled:)``).
    static func extract(
        _ stream: ArchiveStream, into destination: URL, limits: TreeLimits, leavingOut same: [PathKey: FileEntry],
        progress: (Int64) -> Void, isCancelled: () -> Bool
    ) throws -> Extraction {
        var reader = TarReader(stream)

        var files: [FileEntry] = []
        var leftOut = Set<PathKey>()
        var folders = Folders(root: destination.path, limit: limits.folders)
        var seen = Set<PathKey>()
        var written: Int64 = 0
        while true {
            if isCancelled() { throw CancellationError() }
            guard let entry = try reader.next() else { break }
            guard let name = RelativePath.normalized(entry.name) else {
                throw Refusal(description: "entry '\(entry.name)' has an unsafe path (absolute, '..' or empty)")
            }
            guard entry.kind != .hardLink else {
                throw Refusal(description: "entry '\(name)' is a hard link, which map archives may not hold")
            }
            guard seen.insert(PathKey(name)).inserted else {
                throw Refusal(description: "entry '\(name)' appears twice")
            }
            if entry.kind == .folder {
                try folders.make(name)
                continue
            }
            guard entry.kind != .sparse else {
                throw Refusal(description: "entry '\(name)' is sparse, which map archives may not be")
            }
            guard entry.kind == .file else {
                throw Refusal(description: "entry '\(name)' is not a regular file or folder (links, devices and FIFOs are refused)")
            }
            guard files.count < limits.files else {
                throw Refusal(description: "more than the \(limits.files) files the manifest declares")
            }
            let key = PathKey(name)
            let known = same[key].flatMap { $0.size <= leaveOutLimit ? $0 : nil }
            let file = try writeFile(
                &reader, name: name, in: &folders, written: &written, limits: limits, unlessSameAs: known,
                progress: progress, isCancelled: isCancelled)
            if file.leftOut { leftOut.insert(key) }
            files.append(file.entry)
        }
        return Extraction(files: TreeHash.sorted(files), leftOut: leftOut)
    }

    /// Writes the entry being read to `name` under `folders`' root; one the same as `known`
    /// (read into memory first, up to ``leaveOutLimit`` bytes) is hashed and left out.
    private static func writeFile(
        _ reader: inout TarReader, name: String, in folders: inout Folders, written: inout Int64, limits: TreeLimits,
        unlessSameAs known: FileEntry?, progress: (Int64) -> Void, isCancelled: () -> Bool
    ) throws -> (entry: FileEntry, leftOut: Bool) {
        let path = folders.root + "/" + name
        var held: [UInt8]? = known == nil ? nil : []
        var file = held == nil ? try folders.create(path, name: name) : nil
        var hasher = SHA256()
        var size: Int64 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let length = try reader.read(into: buffer)
            if length == 0 { break }
            written += Int64(length)
            guard written <= limits.bytes else {
                throw Refusal(description: "unpacks to more than the \(limits.bytes) bytes the manifest declares")
            }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<length])
            hasher.update(bufferPointer: chunk)
            if let count = held?.count, count + length <= leaveOutLimit {
                held?.append(contentsOf: chunk)
            } else {
                if file == nil {
                    file = try folders.create(path, name: name)
                    if let kept = held { try kept.withUnsafeBytes { try file?.writeAll($0) } }
                    held = nil
                }
                try file?.writeAll(chunk)
            }
            size += Int64(length)
            progress(written)
            if isCancelled() { throw CancellationError() }
        }
        let entry = FileEntry(path: name, size: size, sha256: hasher.finalize().hexString)
        if let kept = held {
            if let known, known.size == entry.size, known.sha256 == entry.sha256 {
                try folders.leftOut(name)
                return (entry, true)
            }
            try kept.withUnsafeBytes { try folders.create(path, name: name).writeAll($0) }
        }
        return (entry, false)
    }

    /// The folders made under the destination, each once: an archive of many files in few
    /// folders costs no `mkdir` and `stat` per file.
    private struct Folders {
        let root: String
        private var made: Set<PathKey> = []  // by bytes: NFC and NFD names are two folders
        /// Files not written: a folder of the same name is still a conflict.
        private var unwritten: Set<PathKey> = []
        /// Folders that files not written lie in (not made): a file of the same name is a conflict.
        private var implied: Set<PathKey> = []
        /// Files written: a file not written may not lie in one.
        private var files: Set<PathKey> = []

        /// Most folders made (``TreeLimits/folders``).
        let limit: Int

        init(root: String, limit: Int) {
            self.root = root
            self.limit = limit
        }

        /// Creates the file at `path` for entry `name`, with its folders. A name the archive
        /// should not hold is a refusal; anything else (a full disk or inode table, a quota,
        /// a read-only file system) is the store's failure.
        mutating func create(_ path: String, name: String) throws -> SystemFile {
            if let slash = name.lastIndex(of: "/") { try make(String(name[..<slash])) }
            guard !implied.contains(PathKey(name)) else {
                throw Refusal(description: "'\(name)' is both a file and a folder in the archive")
            }
            files.insert(PathKey(name))
            let refused: [Errno] = [.fileExists, .tooManySymbolicLinkLevels, .isDirectory, .notDirectory, .fileNameTooLong]
            switch Result(catching: { () throws(SystemError) in try SystemFile.create(path) }) {
            case .success(let file): return file
            case .failure(let error) where refused.contains(error.errno):
                throw Refusal(description: "cannot create '\(name)': \(error.reason)")
            case .failure(let error): throw error
            }
        }

        /// Records that file `name` was left out, refusing it where a folder has its name
        /// or a file has the name of a folder it lies in, as ``create(_:name:)`` would.
        mutating func leftOut(_ name: String) throws {
            let clash = Refusal(description: "'\(name)' is both a file and a folder in the archive")
            guard !made.contains(PathKey(name)), !implied.contains(PathKey(name)) else { throw clash }
            var parts: [PathKey] = []
            var part = ""
            for component in name.split(separator: "/").dropLast() {
                part += (part.isEmpty ? "" : "/") + component
                guard !unwritten.contains(PathKey(part)), !files.contains(PathKey(part)) else { throw clash }
                parts.append(PathKey(part))
            }
            implied.formUnion(parts)
            unwritten.insert(PathKey(name))
        }

        /// Makes folder `relative` and its parents, refusing a part that is a file.
        mutating func make(_ relative: String) throws {
            var path = root
            var part = ""
            for component in relative.split(separator: "/") {
                path += "/" + component
                part += (part.isEmpty ? "" : "/") + component
                guard !made.contains(PathKey(part)) else { continue }
                guard !unwritten.contains(PathKey(part)) else {
                    throw Refusal(description: "'\(relative)' is both a file and a folder in the archive")
                }
                guard made.count < limit else { throw Refusal.folders(beyond: limit) }
                if case .failure(let error) = Result(catching: { () throws(SystemError) in try FileSystem.makeDirectory(path) }) {
                    guard error.errno == .notDirectory else { throw error }
                    throw Refusal(description: "'\(relative)' is both a file and a folder in the archive")
                }
                guard FileStatus.of(path)?.kind == .directory else {
                    throw Refusal(description: "'\(relative)' is both a file and a folder in the archive")
                }
                made.insert(PathKey(part))
            }
        }
    }
}

extension ArchiveExtractor.Refusal: MapLoaderErrorConvertible {
    /// An archive that holds what the manifest does not allow (a call site that knows the
    /// package says ``MapLoaderError/invalidArchive(package:group:detail:)``).
    package var mapLoaderError: MapLoaderError { .integrityFailed(what: "an archive", detail: description) }
}
