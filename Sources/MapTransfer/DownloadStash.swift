package import Foundation
import MapPlatform

/// Finished downloads no request waited for, kept until a request asks for the same bytes:
/// a download task that went on after a pause, or one the system finished in the
/// background while the app was suspended or not running (``FoundationDownloadTransport``).
///
/// An entry is named by its request (URL and `Range`; not `If-Range`, whose validator a
/// relaunched app may not know yet: blobs are named by their hash, and every file's pinned
/// hash refuses a mix of two versions): the response head as JSON
/// (`<name>.json`, which holds the request too) and the body (`<name>`). The body is put in
/// place last, by one rename, so an entry is whole or absent; taking it renames it away
/// first, so two processes never both take it. What an entry holds is no more trusted than
/// the network: it goes through the same ``HTTPExchange`` as bytes from a server, and each
/// body is at most a window (the transport cancels a task that sends more).
package struct DownloadStash: Sendable {
    /// The folder (created on the first entry).
    package let folder: URL

    /// Entries older than this are removed when a transport opens the stash.
    package static let maximumAge: TimeInterval = 7 * 24 * 3600

    package init(folder: URL) { self.folder = folder }

    /// A kept response: its head and the file holding its body (the caller removes it).
    package struct Entry: Sendable {
        package let head: ResponseHead
        package let body: URL
    }

    private struct Record: Codable {
        var request: String
        var status: Int
        var contentLength: Int64?
        var contentRange: String?
        var etag: String?
    }

    /// The stash's name for a request: what identifies the bytes asked for.
    package static func request(_ url: URL, headers: [(name: String, value: String)]) -> String {
        let range = headers.first { $0.name == "Range" }?.value ?? ""
        return url.absoluteString + "\n" + range
    }

    /// The bytes `request` asked for, when it asked for a closed window (`bytes=a-b`): only
    /// such answers are kept (a catalog's fetch, which names no window, is never served later
    /// from here), and none longer than its window.
    package static func windowLength(of request: String) -> Int64? {
        guard let range = request.split(separator: "\n").last, range.hasPrefix("bytes=") else { return nil }
        let bounds = range.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first >= 0, last >= first,
            last - first < Int64.max
        else { return nil }
        return last - first + 1
    }

    /// The file name of `request` (FNV-1a, 64 bits; the record holds the request itself,
    /// so a collision only costs a fetch).
    private func name(_ request: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in request.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 16)
    }

    /// Keeps `file` (moved, or copied where it lies on another file system) as the response
    /// `head` to `request`, if `request` asked for a closed window and `file` is no longer
    /// than it; `false` when it is not kept. Blocking: call on the delegate's queue or the
    /// blocking threads.
    @discardableResult
    package func put(_ file: URL, head: ResponseHead, request: String) throws -> Bool {
        guard let window = Self.windowLength(of: request), let size = FileStatus.of(file.path)?.size, size <= window else {
            return false
        }
        try FileSystem.makeDirectories(folder)
        let name = name(request)
        let unique = UUID().uuidString
        let record = Record(
            request: request, status: head.status, contentLength: head.contentLength, contentRange: head.contentRange,
            etag: head.etag)
        let recordTemp = folder.appendingPathComponent(".\(name).\(unique).json")
        try FileSystem.write(try JSONEncoder().encode(record), to: recordTemp)
        try FileSystem.rename(recordTemp.path, folder.appendingPathComponent(name + ".json").path)
        let bodyTemp = folder.appendingPathComponent(".\(name).\(unique)")
        do {
            try FileSystem.rename(file.path, bodyTemp.path)
        } catch {
            try FileSystem.copyFile(file.path, bodyTemp.path)
        }
        try FileSystem.rename(bodyTemp.path, folder.appendingPathComponent(name).path)
        return true
    }

    /// The entry kept for `request`, taken out of the stash; `nil` when there is none.
    /// Blocking: call on the blocking threads.
    package func take(_ request: String) -> Entry? {
        let name = name(request)
        let body = folder.appendingPathComponent(name)
        let recordFile = folder.appendingPathComponent(name + ".json")
        guard FileStatus.of(recordFile.path)?.size ?? .max <= 64 << 10, let data = FileSystem.contents(recordFile.path),
            let record = try? JSONDecoder().decode(Record.self, from: data), record.request == request
        else { return nil }
        let taken = folder.appendingPathComponent(".\(name).taken-\(UUID().uuidString)")
        guard (try? FileSystem.rename(body.path, taken.path)) != nil else { return nil }
        FileSystem.remove(recordFile.path)
        let head = ResponseHead(
            status: record.status, contentLength: record.contentLength, contentRange: record.contentRange, etag: record.etag)
        return Entry(head: head, body: taken)
    }

    /// Removes entries older than ``maximumAge`` and what an interrupted put or take left
    /// (names starting with a dot) older than a day. Blocking.
    package func expire(now: Date = Date()) {
        for name in FileSystem.names(in: folder.path) {
            let path = folder.appendingPathComponent(name).path
            guard let modified = FileStatus.of(path)?.modified else { continue }
            let age = now.timeIntervalSince1970 - modified
            if age > Self.maximumAge || (name.hasPrefix(".") && age > 24 * 3600) { FileSystem.remove(path) }
        }
    }
}
