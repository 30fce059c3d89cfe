import Crypto
package import Foundation
package import MapModel
import MapPlatform

/// Copies a tree of plain files (an exported site's `trees/<hash>/`) into the store,
/// hashing every byte as it goes, within the limits the signed manifest sets. The caller
/// compares the result's ``TreeHash`` with the manifest's, as for an unpacked archive.
package enum TreeCopy {
    /// Copies every regular file below `source` into the empty folder `destination` and
    /// returns their entries, sorted by path. Links, devices and more than `limits` allow
    /// are refused with ``ArchiveExtractor/Refusal``.
    package static func copy(
        from source: URL, into destination: URL, limits: TreeLimits,
        progress: (Int64) -> Void = { _ in }, isCancelled: () -> Bool = { false }
    ) throws -> [FileEntry] {
        let files: [(path: String, size: Int64)]
        do {
            files = try FileTree.files(in: source)
        } catch let problem as FileTree.Problem {
            throw ArchiveExtractor.Refusal(description: problem.description)
        }
        guard files.count <= limits.files else {
            throw ArchiveExtractor.Refusal(description: "more than the \(limits.files) files the manifest declares")
        }
        guard files.saturatingSum(\.size) <= limits.bytes else {
            throw ArchiveExtractor.Refusal(description: "more than the \(limits.bytes) bytes the manifest declares")
        }
        guard TreeLimits.folders(of: files.map(\.path)) <= limits.folders else {
            throw ArchiveExtractor.Refusal.folders(beyond: limits.folders)
        }
        var written: Int64 = 0
        var entries: [FileEntry] = []
        for file in files {
            if isCancelled() { throw CancellationError() }
            let target = destination.appendingPathComponent(file.path)
            try FileSystem.makeDirectories(target.deletingLastPathComponent())
            let input = try SystemFile.openForReading(source.appendingPathComponent(file.path).path)
            let output = try SystemFile.create(target.path)
            var hasher = SHA256()
            var size: Int64 = 0
            try input.forEachChunk { chunk in
                size += Int64(chunk.count)
                written += Int64(chunk.count)
                guard written <= limits.bytes else {
                    throw ArchiveExtractor.Refusal(description: "more than the \(limits.bytes) bytes the manifest declares")
                }
                hasher.update(bufferPointer: chunk)
                try output.writeAll(chunk)
                progress(written)
            }
            entries.append(FileEntry(path: file.path, size: size, sha256: SHA256Hash(hasher.finalize()).hex))
        }
        return TreeHash.sorted(entries)
    }
}
