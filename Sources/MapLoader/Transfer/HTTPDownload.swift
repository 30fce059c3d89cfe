import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP GET that streams its body onto the end of a partial file.
final class HTTPDownload: NSObject, URLSessionDataDelegate, Sendable {
    /// How one attempt ended.
    enum Outcome: Sendable {
        case finished
        case failed(MapLoaderError)
        /// Worth another attempt; `validator` is the entity tag to resume against.
        case retryable(reason: String, validator: String?)
    }

    private struct State {
        var handle: FileHandle?
        var offset: Int64 = 0
        var validator: String?
        var outcome: Outcome?
        var continuation: CheckedContinuation<Outcome, Never>?
    }

    private let url: URL
    private let file: URL
    private let limit: TransferLimit
    private let progress: @Sendable (Int64) -> Void
    private let state = Mutex(State())

    private init(url: URL, file: URL, limit: TransferLimit, progress: @escaping @Sendable (Int64) -> Void) {
        self.url = url
        self.file = file
        self.limit = limit
        self.progress = progress
    }

    /// Runs one attempt: `Range` from the partial file's length, `If-Range: validator`.
    static func run(url: URL, file: URL, limit: TransferLimit, validator: String?,
                    progress: @escaping @Sendable (Int64) -> Void) async -> Outcome {
        let download = HTTPDownload(url: url, file: file, limit: limit, progress: progress)
        let handle: FileHandle
        let offset: Int64
        do {
            handle = try TransferFile.openForAppend(file)
            offset = Int64(try handle.offset())
        } catch {
            return .failed(.storageFailed(path: file.path, reason: Store.reason(error)))
        }
        if case .exactly(let size) = limit, offset == size {
            try? handle.close()
            return .finished
        }
        if offset > limit.maximum {
            try? handle.close()
            try? FileManager.default.removeItem(at: file)
            return .retryable(reason: "the partial file was longer than pinned", validator: nil)
        }
        download.state.withLock {
            $0.handle = handle
            $0.offset = offset
        }
        var request = URLRequest(url: url)
        request.timeoutInterval = 30
        if offset > 0 {
            request.setValue("bytes=\(offset)-", forHTTPHeaderField: "Range")
            if let validator { request.setValue(validator, forHTTPHeaderField: "If-Range") }
        }
        let session = URLSession(configuration: .ephemeral, delegate: download, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: request)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                download.state.withLock { $0.continuation = continuation }
                task.resume()
            }
        } onCancel: {
            task.cancel()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        guard let http = response as? HTTPURLResponse else {
            finish(.failed(.connectionFailed(url: url.absoluteString, reason: "not an HTTP response")))
            completionHandler(.cancel)
            return
        }
        let etag = http.value(forHTTPHeaderField: "ETag")
        let decision: Outcome? = state.withLock { state in
            state.validator = etag
            let announced = http.expectedContentLength
            if case .exactly(let size) = limit, [200, 206].contains(http.statusCode), announced >= 0,
               announced != size - (http.statusCode == 206 ? state.offset : 0) {
                return .failed(.integrityFailed(what: url.absoluteString,
                                                detail: "the server announces \(announced) bytes where \(size - state.offset) are pinned"))
            }
            switch http.statusCode {
            case 200:
                if state.offset > 0 {
                    // The server ignored Range or the file changed (If-Range failed): start over.
                    do {
                        try state.handle?.truncate(atOffset: 0)
                        state.offset = 0
                    } catch {
                        return .failed(.storageFailed(path: file.path, reason: Store.reason(error)))
                    }
                }
                return nil
            case 206:
                let range = http.value(forHTTPHeaderField: "Content-Range") ?? ""
                guard range.hasPrefix("bytes \(state.offset)-") else {
                    return .failed(.integrityFailed(what: url.absoluteString,
                                                    detail: "server resumed at the wrong offset (\(range))"))
                }
                return nil
            case 416 where { if case .exactly(let n) = limit { return n == state.offset } else { return false } }():
                return .finished
            case 408, 429, 500...599:
                return .retryable(reason: "HTTP \(http.statusCode)", validator: etag)
            default:
                return .failed(.httpStatus(url: url.absoluteString, status: http.statusCode))
            }
        }
        if let decision {
            finish(decision)
            completionHandler(.cancel)
        } else {
            completionHandler(.allow)
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let failure: Outcome? = state.withLock { state in
            guard state.outcome == nil, let handle = state.handle else { return nil }
            guard state.offset + Int64(data.count) <= limit.maximum else {
                return .failed(.integrityFailed(what: url.absoluteString,
                                                detail: "longer than the \(limit.maximum) bytes pinned for it"))
            }
            do {
                try handle.write(contentsOf: data)
            } catch {
                return .failed(.storageFailed(path: file.path, reason: Store.reason(error)))
            }
            state.offset += Int64(data.count)
            return nil
        }
        if let failure {
            finish(failure)
            dataTask.cancel()
        } else {
            progress(state.withLock { $0.offset })
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let outcome: Outcome = state.withLock { state in
            if let error {
                if (error as? URLError)?.code == .cancelled { return .failed(.cancelled) }
                return .retryable(reason: error.localizedDescription, validator: state.validator)
            }
            if case .exactly(let size) = limit, state.offset != size {
                return .retryable(reason: "connection closed after \(state.offset) of \(size) bytes",
                                  validator: state.validator)
            }
            return .finished
        }
        finish(outcome)
    }

    /// Records the first outcome, closes the file and resumes the waiting caller once.
    private func finish(_ outcome: Outcome) {
        let continuation: CheckedContinuation<Outcome, Never>? = state.withLock { state in
            if state.outcome == nil {
                state.outcome = outcome
                try? state.handle?.synchronize()
                try? state.handle?.close()
                state.handle = nil
            }
            defer { state.continuation = nil }
            return state.continuation.map { c in c }
        }
        continuation?.resume(returning: state.withLock { $0.outcome! })
    }
}
