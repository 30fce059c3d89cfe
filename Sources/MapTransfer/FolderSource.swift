package import Foundation
package import MapModel
import MapPlatform
import SystemPackage

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
        let input: SystemFile
        do {
            input = try SystemFile.openRegularForReading(source.path)
        } catch  where error.errno == .invalidArgument {
            throw .connectionFailed(url: source.path, reason: "the folder site holds something other than a file there (a FIFO, a device, a folder)")
        } catch {
            throw .httpStatus(url: source.path, status: 404)
        }
        do {
            let output = try SystemFile.openForAppend(file.path)
            var offset = try output.size()
            // Batches of a few MiB on the blocking threads (a card or a USB stick is slow;
            // Swift's cooperative pool must not wait for it), a pause or a cancellation
            // between them.
            while true {
                try Task.checkCancellation()
                try await control?.waitWhilePaused()
                let start = offset
                let copied = try await offActor { try Self.copyBatch(input, from: source, to: output, at: start, limit: limit) }
                guard copied > 0 else { break }
                offset += copied
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

    /// Bytes one batch copies at most.
    static let batch = 8 << 20

    /// Copies the site's file from `offset` onto the end of `output`, up to ``batch`` bytes;
    /// the bytes copied, 0 at the end of the file. A read error is the site's (a failing
    /// disk or card), not this device's, so the next mirror may serve the file.
    private static func copyBatch(
        _ input: SystemFile, from source: URL, to output: SystemFile, at offset: Int64, limit: TransferLimit
    ) throws -> Int64 {
        var buffer = [UInt8](repeating: 0, count: 1 << 18)
        var copied: Int64 = 0
        while copied < batch, !Task.isCancelled {
            let count: Int
            do {
                count = try buffer.withUnsafeMutableBytes { try input.readChunk(into: $0, at: offset + copied) }
            } catch {
                throw MapLoaderError.connectionFailed(url: source.path, reason: "the folder site could not be read (\(error)); check its disk")
            }
            guard count > 0 else { break }
            guard offset + copied + Int64(count) <= limit.maximum else {
                throw MapLoaderError.integrityFailed(what: source.path, detail: "longer than the \(limit.maximum) bytes pinned for it")
            }
            try buffer.withUnsafeBytes { try output.writeAll(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            copied += Int64(count)
        }
        return copied
    }
}
