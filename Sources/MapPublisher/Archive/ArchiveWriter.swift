@preconcurrency import CArchive
import Foundation
import MapDelta
import MapModel
import MapPlatform

/// Writes a folder's files into a deterministic `.tar.zst` or `.tar.gz`: sorted entries,
/// fixed timestamps, owner and modes, so equal trees give equal bytes. File data is
/// streamed in 256 KiB chunks.
///
/// A `.tar.zst` is written as a plain tar first and then compressed as one zstd frame
/// whose size is pledged up front: zstd then sizes its tables to the input. libarchive's
/// zstd filter streams data of unknown size, and at level 19 sets up ~100 MB of tables
/// for every archive, which made a 10,000-leaf catalog of tiny archives take 18 minutes.
package enum ArchiveWriter {
    /// Why an archive could not be written.
    package struct Failure: Error, CustomStringConvertible {
        /// One line naming the file and the reason.
        package let description: String
    }

    /// Writes `files` (paths relative to `root`, as ``FileTree/files(in:)`` lists them) to `output`.
    /// - Parameter level: compression level (zstd 1–22, gzip 1–9).
    package static func write(
        root: URL, files: [(path: String, size: Int64)], to output: URL,
        format: ArchiveFormat, level: Int
    ) throws {
        guard format == .tarZstd else {
            return try writeTar(root: root, files: files, to: output, format: format, level: level)
        }
        let tar = output.appendingPathExtension("tar")
        defer { FileSystem.remove(tar.path) }
        try writeTar(root: root, files: files, to: tar, format: nil, level: level)
        do {
            let destination = try SystemFile.createOrTruncate(output.path)
            _ = try ZstdCompressor().encode(path: tar.path, prefix: nil, level: min(max(level, 1), 19), into: destination)
        } catch {
            throw Failure(description: "cannot compress \(output.path): \(error)")
        }
    }

    /// Writes the tar, compressed by libarchive as `format` says (`nil`: uncompressed).
    private static func writeTar(
        root: URL, files: [(path: String, size: Int64)], to output: URL,
        format: ArchiveFormat?, level: Int
    ) throws {
        guard let archive = archive_write_new() else { throw Failure(description: "libarchive is out of memory") }
        defer { archive_write_free(archive) }
        archive_write_set_format_pax_restricted(archive)
        // Names are stored as their exact bytes (UTF-8, NFC and NFD kept apart) rather than
        // converted through the process locale, which fails for anything but ASCII in "C".
        // Only then: archives of ASCII names stay byte-identical to earlier releases.
        if files.contains(where: { $0.path.utf8.contains { $0 >= 0x80 } }),
            archive_write_set_format_option(archive, "pax", "hdrcharset", "BINARY") != ARCHIVE_OK
        {
            throw Failure(description: "libarchive cannot store non-ASCII names: \(errorString(archive))")
        }
        switch format {
        case nil:
            break
        case .tarZstd:
            archive_write_add_filter_zstd(archive)
            archive_write_set_filter_option(archive, "zstd", "compression-level", "\(min(max(level, 1), 19))")
        case .tarGzip:
            archive_write_add_filter_gzip(archive)
            archive_write_set_filter_option(archive, "gzip", "compression-level", "\(min(max(level, 1), 9))")
            archive_write_set_filter_option(archive, "gzip", "timestamp", nil)
        }
        guard archive_write_open_filename(archive, output.path) == ARCHIVE_OK else {
            throw Failure(description: "cannot create \(output.path): \(errorString(archive))")
        }
        guard let entry = archive_entry_new() else { throw Failure(description: "libarchive is out of memory") }
        defer { archive_entry_free(entry) }
        var buffer = [UInt8](repeating: 0, count: 1 << 18)
        for file in files {
            archive_entry_clear(entry)
            archive_entry_set_pathname(entry, file.path)
            archive_entry_set_filetype(entry, 0o100000)
            archive_entry_set_perm(entry, 0o644)
            archive_entry_set_size(entry, file.size)
            archive_entry_set_mtime(entry, 0, 0)
            guard archive_write_header(archive, entry) == ARCHIVE_OK else {
                throw Failure(description: "cannot add \(file.path): \(errorString(archive))")
            }
            let handle = try FileHandle(forReadingFrom: root.appendingPathComponent(file.path))
            defer { try? handle.close() }
            var written: Int64 = 0
            while true {
                let count = try buffer.withUnsafeMutableBytes { raw -> Int in
                    let n = read(handle.fileDescriptor, raw.baseAddress, raw.count)
                    guard n >= 0 else { throw Failure(description: "cannot read \(file.path)") }
                    return n
                }
                if count == 0 { break }
                let accepted = buffer.withUnsafeBytes { archive_write_data(archive, $0.baseAddress, count) }
                guard accepted == count else {
                    throw Failure(description: "cannot write \(file.path) into the archive: \(errorString(archive))")
                }
                written += Int64(count)
            }
            guard written == file.size else {
                throw Failure(description: "\(file.path) changed size while it was archived")
            }
        }
        guard archive_write_close(archive) == ARCHIVE_OK else {
            throw Failure(description: "cannot finish \(output.path): \(errorString(archive))")
        }
    }

    private static func errorString(_ archive: OpaquePointer) -> String {
        archive_error_string(archive).map { String(cString: $0) } ?? "unknown libarchive error"
    }
}
