import Foundation
import MapDelta
import MapModel
import MapPlatform

/// Reads and writes a site folder: catalog, manifests and content-addressed blobs.
/// Every file lands by write-to-temporary then rename, so a server never serves half a file.
struct SiteWriter {
    let root: URL

    var scratch: URL { root.appendingPathComponent(".publish-tmp") }

    func prepare() throws {
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    func cleanUp() {
        try? FileManager.default.removeItem(at: scratch)
    }

    /// The current catalog, or `nil` for a new site.
    func catalog() throws -> Catalog? {
        let file = root.appendingPathComponent(SiteLayout.catalog)
        guard let data = try? Data(contentsOf: file) else { return nil }
        do {
            return try JSONCoding.decode(Catalog.self, from: data)
        } catch {
            throw PublishError("\(file.path) is unreadable (\(error)); restore it from a backup")
        }
    }

    /// The manifest of a catalog entry.
    func manifest(_ entry: Catalog.Entry) throws -> Manifest {
        let file = root.appendingPathComponent(entry.manifest)
        do {
            return try Manifest.decode(Data(contentsOf: file))
        } catch {
            throw PublishError("\(file.path) is unreadable (\(error)); restore it from a backup")
        }
    }

    /// The blob file for `sha256`.
    func blob(_ sha256: String) -> URL { root.appendingPathComponent(SiteLayout.blob(sha256)) }

    /// Moves a finished temporary file into `blobs/` under its hash; returns hash, size and
    /// whether the blob was new.
    func storeBlob(_ file: URL) throws -> (sha256: String, size: Int64, isNew: Bool) {
        let (sha256, size) = try FileHashing.sha256(ofFileAt: file)
        let target = blob(sha256)
        if FileManager.default.fileExists(atPath: target.path) {
            try FileManager.default.removeItem(at: file)
            return (sha256, size, false)
        }
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.moveItem(at: file, to: target)
        return (sha256, size, true)
    }

    /// Writes `data` at site-relative `path` atomically.
    func write(_ data: Data, at path: String) throws {
        let target = root.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        let temporary = scratch.appendingPathComponent(UUID().uuidString)
        try data.write(to: temporary)
        do {
            try FileSystem.rename(temporary.path, target.path)
        } catch {
            throw PublishError("cannot write \(target.path): \(error.reason)")
        }
    }

    /// A fresh temporary file path in the scratch folder.
    func temporaryFile(_ suffix: String = "") -> URL {
        scratch.appendingPathComponent(UUID().uuidString + suffix)
    }
}
