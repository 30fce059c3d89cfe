package import Foundation
package import MapModel
import MapPlatform

/// A site in a local folder (a mounted disk, a `file://` URL): files are copied in chunks.
package struct FolderSource: SiteSource {
    /// The folder holding `catalog.json`.
    package let root: URL

    /// Pauses and resumes the copies of the operation this source is for.
    package var control: TransferControl?

    /// A source reading from `root`.
    package init(root: URL) { self.root = root }

    /// This folder for the operation `control` pauses.
    package func controlled(by control: TransferControl?) -> any SiteSource {
        var source = self
        source.control = control
        return source
    }

    package var baseURL: URL { root }

    package func tree(_ treeHash: String) -> URL? {
        let folder = root.appendingPathComponent(SiteLayout.tree(treeHash))
        return FileStatus.of(folder.path)?.kind == .directory ? folder : nil
    }

    package func download(
        _ path: String, to file: URL, limit: TransferLimit,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws(MapLoaderError) {
        let source = root.appendingPathComponent(path)
        guard FileStatus.of(root.path)?.kind == .directory else {
            throw .connectionFailed(url: root.path, reason: "the folder \(root.path) does not exist (is the path right, the disk mounted?)")
        }
        guard let input = try? FileHandle(forReadingFrom: source) else {
            throw .httpStatus(url: source.path, status: 404)
        }
        defer { try? input.close() }
        do {
            let output = try TransferFile.openForAppend(file)
            defer { try? output.close() }
            var offset = Int64(try output.offset())
            try input.seek(toOffset: UInt64(offset))
            while let chunk = try Self.read(input, from: source), !chunk.isEmpty {
                try Task.checkCancellation()
                try await control?.waitWhilePaused()
                guard offset + Int64(chunk.count) <= limit.maximum else {
                    throw MapLoaderError.integrityFailed(what: source.path, detail: "longer than the \(limit.maximum) bytes pinned for it")
                }
                try output.write(contentsOf: chunk)
                offset += Int64(chunk.count)
                progress(offset)
            }
            if case .exactly(let size) = limit, offset != size {
                throw MapLoaderError.integrityFailed(what: source.path, detail: "\(offset) bytes where \(size) are pinned")
            }
        } catch let error as MapLoaderError {
            throw error
        } catch is CancellationError {
            throw .cancelled
        } catch {
            throw .storage(path: file.path, error)
        }
    }

    /// The next chunk of the site's file: a read error is the site's (a failing disk or
    /// card), not this device's, so the next mirror may serve the file.
    private static func read(_ input: FileHandle, from source: URL) throws(MapLoaderError) -> Data? {
        do {
            return try input.read(upToCount: 1 << 18)
        } catch {
            throw .connectionFailed(url: source.path, reason: "the folder site could not be read (\(error)); check its disk")
        }
    }
}

/// Helpers for the partial files downloads write into.
package enum TransferFile {
    /// Opens `url` for appending, creating it empty if missing; the offset is at its end.
    package static func openForAppend(_ url: URL) throws -> FileHandle {
        let file = try SystemFile.openForAppend(url.path)
        let handle = FileHandle(fileDescriptor: file.releaseDescriptor(), closeOnDealloc: true)
        try handle.seekToEnd()
        return handle
    }
}
