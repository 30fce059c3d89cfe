@preconcurrency import CArchive
import Crypto
package import Foundation
package import MapModel
import MapPlatform
import SystemPackage

/// Unpacks a full archive into an empty folder, refusing anything a map tree cannot hold.
///
/// Entries are read with libarchive and written by this type itself (never through
/// `archive_write_disk`), so the checks are ours and strict: only regular files and
/// folders; no absolute paths, `..`, links, devices or FIFOs; no duplicates; at most the
/// manifest's `files` entries and `unpackedSize` bytes. Files are created with
/// `O_EXCL | O_NOFOLLOW` and hashed while written, so the result is verified against
/// the manifest's tree hash without reading it twice. Memory stays bounded: data moves in
/// libarchive's blocks.
package enum ArchiveExtractor {
    /// Why an archive was refused.
    package struct Refusal: Error, CustomStringConvertible {
        /// One line: which entry and why.
        package let description: String
    }

    /// Limits taken from the signed manifest.
    package struct Limits: Sendable {
        /// Most file entries allowed.
        package var files: Int
        /// Most unpacked bytes allowed.
        package var bytes: Int64

        /// Limits of at most `files` entries and `bytes` unpacked bytes.
        package init(files: Int, bytes: Int64) {
            self.files = files
            self.bytes = bytes
        }
    }

    /// Extracts `archive` into `destination` (which must exist and be empty) and returns
    /// every file written with its hash, sorted by path.
    /// - Parameters:
    ///   - progress: called with unpacked bytes written so far.
    ///   - isCancelled: polled between blocks; `true` stops with `CancellationError`.
    package static func extract(
        _ archive: URL, into destination: URL, limits: Limits,
        progress: (Int64) -> Void = { _ in }, isCancelled: () -> Bool = { false }
    ) throws -> [FileEntry] {
        guard let reader = archive_read_new() else { throw Refusal(description: "libarchive is out of memory") }
        defer { archive_read_free(reader) }
        archive_read_support_format_tar(reader)
        archive_read_support_filter_gzip(reader)
        archive_read_support_filter_zstd(reader)
        guard archive_read_open_filename(reader, archive.path, 1 << 16) == ARCHIVE_OK else {
            throw Refusal(description: "not a readable tar.gz or tar.zst archive (\(errorString(reader)))")
        }

        var files: [FileEntry] = []
        var seen = Set<PathKey>()
        var written: Int64 = 0
        var entry: OpaquePointer?
        while true {
            if isCancelled() { throw CancellationError() }
            let status = archive_read_next_header(reader, &entry)
            if status == ARCHIVE_EOF { break }
            guard status == ARCHIVE_OK, let entry else {
                throw Refusal(description: "corrupt archive (\(errorString(reader)))")
            }
            guard let rawName = archive_entry_pathname(entry).map({ String(validatingCString: $0) }) ?? "" else {
                throw Refusal(description: "an entry's name is not valid UTF-8")
            }
            guard let name = RelativePath.normalized(rawName) else {
                throw Refusal(description: "entry '\(rawName)' has an unsafe path (absolute, '..' or empty)")
            }
            guard archive_entry_hardlink(entry) == nil else {
                throw Refusal(description: "entry '\(name)' is a hard link, which map archives may not hold")
            }
            guard seen.insert(PathKey(name)).inserted else {
                throw Refusal(description: "entry '\(name)' appears twice")
            }
            let type = UInt32(archive_entry_filetype(entry))
            if type == 0o040000 {
                try makeDirectories(name, in: destination)
                continue
            }
            guard type == 0o100000 else {
                throw Refusal(description: "entry '\(name)' is not a regular file or folder (links, devices and FIFOs are refused)")
            }
            guard files.count < limits.files else {
                throw Refusal(description: "more than the \(limits.files) files the manifest declares")
            }
            if let slash = name.lastIndex(of: "/") {
                try makeDirectories(String(name[..<slash]), in: destination)
            }
            let file = try writeFile(
                reader, name: name, in: destination, written: &written, limits: limits,
                progress: progress, isCancelled: isCancelled)
            files.append(file)
        }
        return TreeHash.sorted(files)
    }

    private static func writeFile(
        _ reader: OpaquePointer, name: String, in destination: URL, written: inout Int64, limits: Limits,
        progress: (Int64) -> Void, isCancelled: () -> Bool
    ) throws -> FileEntry {
        let path = destination.path + "/" + name
        let file = try create(path, name: name)
        var hasher = SHA256()
        var size: Int64 = 0
        var buffer: UnsafeRawPointer?
        var length = 0
        var offset: Int64 = 0
        while true {
            let status = archive_read_data_block(reader, &buffer, &length, &offset)
            if status == ARCHIVE_EOF { break }
            guard status == ARCHIVE_OK else {
                throw Refusal(description: "corrupt data in '\(name)' (\(errorString(reader)))")
            }
            guard offset == size else {
                throw Refusal(description: "entry '\(name)' is sparse, which map archives may not be")
            }
            guard let buffer, length > 0 else { continue }
            written += Int64(length)
            guard written <= limits.bytes else {
                throw Refusal(description: "unpacks to more than the \(limits.bytes) bytes the manifest declares")
            }
            let chunk = UnsafeRawBufferPointer(start: buffer, count: length)
            hasher.update(bufferPointer: chunk)
            try file.writeAll(chunk)
            size += Int64(length)
            progress(written)
            if isCancelled() { throw CancellationError() }
        }
        return FileEntry(path: name, size: size, sha256: hasher.finalize().hexString)
    }

    /// Creates the file for entry `name`. A name the archive should not hold is a refusal;
    /// anything else (a full disk or inode table, a quota, a read-only file system) is the
    /// store's failure.
    private static func create(_ path: String, name: String) throws -> SystemFile {
        let refused: [Errno] = [.fileExists, .tooManySymbolicLinkLevels, .isDirectory, .notDirectory, .fileNameTooLong]
        switch Result(catching: { () throws(SystemError) in try SystemFile.create(path) }) {
        case .success(let file): return file
        case .failure(let error) where refused.contains(error.errno):
            throw Refusal(description: "cannot create '\(name)': \(error.reason)")
        case .failure(let error): throw error
        }
    }

    private static func makeDirectories(_ relative: String, in destination: URL) throws {
        var path = destination.path
        for component in relative.split(separator: "/") {
            path += "/" + component
            if case .failure(let error) = Result(catching: { () throws(SystemError) in try FileSystem.makeDirectory(path) }) {
                guard error.errno == .notDirectory else { throw error }
                throw Refusal(description: "'\(relative)' is both a file and a folder in the archive")
            }
            guard FileStatus.of(path)?.kind == .directory else {
                throw Refusal(description: "'\(relative)' is both a file and a folder in the archive")
            }
        }
    }

    private static func errorString(_ archive: OpaquePointer) -> String {
        archive_error_string(archive).map { String(cString: $0) } ?? "unknown libarchive error"
    }
}
