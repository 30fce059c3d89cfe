package import Foundation
package import MapModel
import MapPlatform

/// Where a site's files come from: an HTTP(S) server or a local folder.
package protocol SiteSource: Sendable {
    /// The site's root, for messages.
    var baseURL: URL { get }

    /// Streams the file at site-relative `path` into `file`, appending to what `file`
    /// already holds (a resumed download), and never accepting more than `limit` allows.
    /// - Parameter progress: called with the bytes `file` holds so far.
    func download(
        _ path: String, to file: URL, limit: TransferLimit,
        progress: @escaping @Sendable (Int64) -> Void) async throws(MapLoaderError)

    /// A folder holding the files of the tree with this ``TreeHash``, as an exported site
    /// carries them (`trees/<tree-hash>/…`, see ``SiteLayout/tree(_:)``); `nil` when the
    /// site has none (every HTTP site: they serve archives).
    func tree(_ treeHash: String) -> URL?

    /// Runs `body` with this source; a site served by mirrors (``MirroredSource``) runs it
    /// with each mirror in turn, beginning where `order` says, until it succeeds. The one
    /// place a site fails over: a blob or manifest that fails its hash, or a catalog that
    /// fails acceptance, is fetched from the next mirror as a refused connection is.
    func failingOver<T: Sendable>(
        from order: FailoverOrder, _ body: @Sendable (any SiteSource) async throws -> T
    ) async throws -> T

    /// This source for one operation, whose downloads `control` pauses and resumes: what
    /// the source keeps across operations (the mirror that last worked, the hosts that
    /// answered, the bandwidth cap) is shared with it.
    func controlled(by control: TransferControl?) -> any SiteSource
}

/// Where a walk over a site's mirrors begins.
package enum FailoverOrder: Sendable {
    /// With the mirror that last worked (pinned files: any mirror's bytes are checked).
    case lastWorked
    /// With the configured site, then its mirrors in order (the catalog, which nothing
    /// pins: a mirror that lags behind must not hide a newer version for good).
    case configured
}

extension SiteSource {
    package func tree(_ treeHash: String) -> URL? { nil }

    /// A source with nothing to pause (a test's wrapper of another source) is its own for
    /// every operation.
    package func controlled(by control: TransferControl?) -> any SiteSource { self }

    package func failingOver<T: Sendable>(
        from order: FailoverOrder, _ body: @Sendable (any SiteSource) async throws -> T
    ) async throws -> T {
        try await body(self)
    }

    /// ``failingOver(from:_:)`` beginning with the mirror that last worked.
    package func failingOver<T: Sendable>(_ body: @Sendable (any SiteSource) async throws -> T) async throws -> T {
        try await failingOver(from: .lastWorked, body)
    }

    /// Fetches a small pinned file (a manifest, a manifest part) whole into memory and
    /// checks its SHA-256 against the pin `pinnedBy` names; from a site with mirrors, bytes
    /// that fail go to the next mirror.
    package func fetchPinned(
        _ path: String, size: Int64, sha256: String, pinnedBy: String, scratch: URL
    ) async throws(MapLoaderError) -> Data {
        try await fetchPinned(path, pins: [FilePin(sha256: sha256, size: size)], pinnedBy: pinnedBy, scratch: scratch)
    }

    /// ``fetchPinned(_:size:sha256:pinnedBy:scratch:)`` for a file that may be any one of
    /// `pins` (a manifest, packed or as its JSON): each pin in turn, exactly its length,
    /// until one matches; when none does, the first pin's failure is the error.
    package func fetchPinned(_ path: String, pins: [FilePin], pinnedBy: String, scratch: URL) async throws(MapLoaderError) -> Data {
        do {
            return try await failingOver { source in
                var failure: MapLoaderError?
                for pin in pins {
                    do {
                        let data = try await source.fetchData(path, limit: .exactly(pin.size), scratch: scratch)
                        let actual = await SiteClient.offPool { FileHashing.sha256(of: data) } ?? ""
                        if actual == pin.sha256 { return data }
                        failure =
                            failure
                            ?? MapLoaderError.integrityFailed(
                                what: source.describe(path),
                                detail: "SHA-256 is \(actual.prefix(12))…, the \(pinnedBy) pins \(pin.sha256.prefix(12))…")
                    } catch let error as MapLoaderError {
                        guard case .integrityFailed = error else { throw error }
                        failure = failure ?? error
                    }
                }
                throw failure ?? MapLoaderError.integrityFailed(what: source.describe(path), detail: "the \(pinnedBy) pins nothing")
            }
        } catch {
            throw MapLoaderError(error)
        }
    }
}

/// How long a fetched file may be.
package enum TransferLimit: Sendable, Hashable {
    /// Exactly this many bytes, pinned by signed metadata: a shorter or longer answer is refused.
    case exactly(Int64)
    /// Any length up to this cap (for the catalog, which nothing pins).
    case atMost(Int64)

    package var maximum: Int64 {
        switch self {
        case .exactly(let n), .atMost(let n): return n
        }
    }
}

/// Something the transfer layer tells the caller about the network.
package enum ConnectionEvent: Sendable, Hashable {
    /// A request failed and will be retried after `retryIn` seconds.
    case lost(url: String, reason: String, retryIn: Double)
    /// A request succeeded after a loss.
    case found(url: String)
}

extension SiteSource {
    /// Fetches a small file whole into memory (catalog, manifests), within `limit`.
    package func fetchData(_ path: String, limit: TransferLimit, scratch: URL) async throws(MapLoaderError) -> Data {
        // A reader of a read-only or full data directory still reads: the small file goes to
        // the temporary folder when the scratch folder cannot take the whole of it.
        let fits =
            FileSystem.writeProblem(scratch.path) == nil
            && (FileSystem.availableSpace(at: scratch.path) ?? 0) >= limit.maximum
        let folder = fits ? scratch : URL(fileURLWithPath: NSTemporaryDirectory())
        return try await fetchData(path, limit: limit, into: folder.appendingPathComponent("maploader-fetch-\(UUID().uuidString)"))
    }

    private func fetchData(_ path: String, limit: TransferLimit, into file: URL) async throws(MapLoaderError) -> Data {
        defer { FileSystem.removeTree(file) }
        try await download(path, to: file, limit: limit, progress: { _ in })
        // Read on the blocking threads: a manifest may be 64 MiB.
        switch await SiteClient.offPool({ Result { try Data(contentsOf: file) } }) {
        case .success(let data)?: return data
        case .failure(let error)?: throw .storage(path: file.path, error)
        case nil: throw .cancelled
        }
    }

    /// The absolute URL string of a site-relative path, for messages.
    package func describe(_ path: String) -> String {
        baseURL.appendingPathComponent(path).absoluteString
    }
}

/// Picks the source for a server string: `http(s)://host…`, `file://…`, or a folder given
/// as an absolute path or one starting with `./` or `../`. Anything else (a bare
/// `host:port`, another scheme) is refused, saying which forms work.
package func makeSiteSource(
    _ server: String, retry: RetryPolicy, deadlines: TransferDeadlines,
    limiter: RateLimiter? = nil, transport: any HTTPTransport = HTTPTransports.standard, policy: NetworkPolicy = .any,
    onConnection: @escaping @Sendable (ConnectionEvent) -> Void = { _ in }
) throws(MapLoaderError) -> any SiteSource {
    let forms = "use http://host:port/…, https://…, file:///path, /absolute/path or ./relative/path"
    if server.hasPrefix("http://") || server.hasPrefix("https://") {
        guard let url = URL(string: server), let host = url.host, !host.isEmpty else {
            throw .invalidParameters("'\(server)' is not a valid URL: \(forms)")
        }
        return HTTPSource(
            baseURL: url, retry: retry, deadlines: deadlines, limiter: limiter, transport: transport, policy: policy,
            onConnection: onConnection)
    }
    if server.hasPrefix("file://") {
        guard let url = URL(string: server), url.isFileURL, !url.path.isEmpty else {
            throw .invalidParameters("'\(server)' is not a valid file URL: \(forms)")
        }
        return FolderSource(root: URL(fileURLWithPath: url.path))
    }
    let folderForms = ["/", "./", "../"]
    guard folderForms.contains(where: server.hasPrefix) || server == "." || server == ".." else {
        throw .invalidParameters("'\(server)' is not a site address: \(forms)")
    }
    return FolderSource(root: URL(fileURLWithPath: server))
}
