#if canImport(CCurl)
    import CCurl
    package import Foundation
    import MapModel
    import Synchronization

    /// libcurl, the default transport where the build has it (Linux).
    ///
    /// libcurl hands each piece of body to the exchange on the transfer's own thread and
    /// reads no more from the socket until that call returns: the body goes to disk as it
    /// arrives, a body longer than allowed stops at the first byte too many, and a server
    /// faster than the disk is simply read more slowly. Memory stays at one buffer per
    /// download, whatever the server sends, so requests need no window.
    package struct CurlTransport: HTTPTransport {
        package init() {}

        package var window: Int64? { nil }

        package func perform(_ url: URL, exchange: HTTPExchange) async -> HTTPEnding {
            let transfer = CurlTransfer(exchange: exchange)
            let headers = exchange.requestHeaders.map { "\($0.name): \($0.value)" }
            let connectTimeout = exchange.stallSeconds + 5
            return await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<HTTPEnding, Never>) in
                    // A cancellation that came first never starts the request.
                    if Task.isCancelled {
                        exchange.cancel()
                        return continuation.resume(returning: .stopped)
                    }
                    let thread = Thread {
                        let ending = CurlEasy.perform(
                            url: url.absoluteString, headers: headers, connectTimeout: connectTimeout,
                            context: Unmanaged.passUnretained(transfer).toOpaque())
                        withExtendedLifetime(transfer) { continuation.resume(returning: ending) }
                    }
                    thread.name = "MapLoader download"
                    thread.start()
                }
            } onCancel: {
                exchange.cancel()
            }
        }
    }

    /// One libcurl request: reads header lines into a ``ResponseHead`` and passes the final
    /// one, the body and libcurl's ticks to the exchange.
    private final class CurlTransfer: Sendable {
        private struct Reading {
            /// The response head being read (each redirect and `100 Continue` starts anew).
            var head = ResponseHead(status: 0)
            var location = false
            var passed = false
        }

        let exchange: HTTPExchange
        private let reading = Mutex(Reading())

        init(exchange: HTTPExchange) { self.exchange = exchange }

        /// A header line from libcurl; `false` stops the transfer.
        func header(_ line: Substring) -> Bool {
            let final: ResponseHead? = reading.withLock { reading in
                if line.hasPrefix("HTTP/") {
                    reading = Reading()
                    reading.head.status = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
                    return nil
                }
                let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
                guard trimmed.isEmpty else {
                    Self.record(trimmed, in: &reading)
                    return nil
                }
                // The end of a head: informational answers and redirects libcurl follows are not
                // decided on, nor the blank line after a chunked body's trailers.
                guard !reading.passed else { return nil }
                let status = reading.head.status
                if (100..<200).contains(status) || ((300..<400).contains(status) && reading.location) { return nil }
                reading.passed = true
                return reading.head
            }
            return final.map(exchange.head) ?? true
        }

        private static func record(_ field: String, in reading: inout Reading) {
            guard let colon = field.firstIndex(of: ":") else { return }
            let name = field[..<colon].lowercased()
            let value = field[field.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            switch name {
            case "content-length": reading.head.contentLength = Int64(value)
            case "content-range": reading.head.contentRange = String(value.prefix(200))
            case "etag": reading.head.etag = String(value.prefix(512))
            case "location": reading.location = true
            default: break
            }
        }

        /// Body bytes from libcurl; `false` stops the transfer before they are written. A head
        /// libcurl never ended with a blank line is passed as read so far.
        func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
            let unpassed: ResponseHead? = reading.withLock { reading in
                defer { reading.passed = true }
                return reading.passed ? nil : reading.head
            }
            if let unpassed, !exchange.head(unpassed) { return false }
            return exchange.write(bytes)
        }

        /// libcurl's periodic call (at least once a second, and as bytes move).
        func tick() -> Bool { exchange.tick() }

        static func from(_ context: UnsafeMutableRawPointer?) -> CurlTransfer? {
            context.map { Unmanaged<CurlTransfer>.fromOpaque($0).takeUnretainedValue() }
        }
    }

    /// libcurl's easy interface, as MapLoader uses it: one blocking GET with callbacks into a
    /// ``CurlTransfer``.
    private enum CurlEasy {
        /// libcurl's process-wide set-up, once.
        static let initialised: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

        /// Performs the GET with callbacks into the ``CurlTransfer`` at `context`.
        static func perform(
            url: String, headers: [String], connectTimeout: Double, context: UnsafeMutableRawPointer
        ) -> HTTPEnding {
            guard initialised, let pooled = HandlePool.shared.take() else { return .failed(.broken("libcurl could not start a transfer")) }
            let handle = pooled.handle
            defer { HandlePool.shared.give(pooled) }
            var list: UnsafeMutablePointer<curl_slist>?
            for header in headers { list = curl_slist_append(list, header) }
            defer { curl_slist_free_all(list) }
            let errors = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
            errors.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
            defer { errors.deallocate() }
            _ = maploader_curl_set_string(handle, CURLOPT_URL, url)
            _ = maploader_curl_set_long(handle, CURLOPT_NOSIGNAL, 1)
            _ = maploader_curl_set_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
            _ = maploader_curl_set_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
            _ = maploader_curl_set_long(handle, CURLOPT_FOLLOWLOCATION, 1)
            _ = maploader_curl_set_long(handle, CURLOPT_MAXREDIRS, 5)
            _ = maploader_curl_set_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(connectTimeout * 1000))
            _ = maploader_curl_set_long(handle, CURLOPT_TCP_KEEPALIVE, 1)
            _ = maploader_curl_set_long(handle, CURLOPT_BUFFERSIZE, 128 * 1024)
            _ = maploader_curl_set_string(handle, CURLOPT_USERAGENT, "MapLoader")
            _ = maploader_curl_set_list(handle, CURLOPT_HTTPHEADER, list)
            _ = maploader_curl_set_pointer(handle, CURLOPT_ERRORBUFFER, errors)
            _ = maploader_curl_set_pointer(handle, CURLOPT_HEADERDATA, context)
            _ = maploader_curl_set_data_callback(handle, CURLOPT_HEADERFUNCTION) { pointer, size, count, context in
                guard let transfer = CurlTransfer.from(context), let pointer else { return 0 }
                let bytes = UnsafeRawBufferPointer(start: pointer, count: size * count)
                return transfer.header(Substring(decoding: bytes, as: UTF8.self)) ? size * count : 0
            }
            _ = maploader_curl_set_pointer(handle, CURLOPT_WRITEDATA, context)
            _ = maploader_curl_set_data_callback(handle, CURLOPT_WRITEFUNCTION) { pointer, size, count, context in
                guard let transfer = CurlTransfer.from(context), let pointer else { return 0 }
                return transfer.write(UnsafeRawBufferPointer(start: pointer, count: size * count)) ? size * count : 0
            }
            _ = maploader_curl_set_long(handle, CURLOPT_NOPROGRESS, 0)
            _ = maploader_curl_set_pointer(handle, CURLOPT_XFERINFODATA, context)
            _ = maploader_curl_set_progress_callback(handle) { context, _, _, _, _ in
                CurlTransfer.from(context)?.tick() == false ? 1 : 0
            }
            let code = curl_easy_perform(handle)
            let detail = errors.pointee != 0 ? String(cString: errors) : String(cString: curl_easy_strerror(code))
            switch code {
            case CURLE_OK:
                return .completed
            case CURLE_WRITE_ERROR, CURLE_ABORTED_BY_CALLBACK:
                return .stopped
            case CURLE_COULDNT_CONNECT:
                return .failed(.refused)
            case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
                return .failed(.unresolved)
            case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
                CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
                return .failed(.tls(detail))
            default:
                return .failed(.broken(detail))
            }
        }
    }

    /// Idle libcurl handles, reused so that a connection (and its TLS session) to a host
    /// serves many downloads: a bandwidth cap fetches a file in many small windows, and an
    /// install fetches many small files.
    private final class HandlePool: Sendable {
        /// A libcurl easy handle. Proof for `@unchecked Sendable`: a handle is only ever used
        /// by one thread at a time; it leaves the pool (under the pool's lock) for exactly one
        /// transfer on that transfer's thread, and comes back only when the transfer is over.
        struct Handle: @unchecked Sendable {
            let handle: UnsafeMutableRawPointer
        }

        static let shared = HandlePool()
        /// More idle handles than this are cleaned up instead of kept.
        private static let capacity = 8
        private let idle = Mutex<[Handle]>([])

        /// An idle handle, reset to defaults (its connections and caches stay), or a new one.
        func take() -> Handle? {
            if let handle = idle.withLock({ $0.popLast() }) {
                curl_easy_reset(handle.handle)
                return handle
            }
            return curl_easy_init().map(Handle.init)
        }

        /// Gives a handle back after its transfer.
        func give(_ handle: Handle) {
            let kept = idle.withLock { idle in
                guard idle.count < Self.capacity else { return false }
                idle.append(handle)
                return true
            }
            if !kept { curl_easy_cleanup(handle.handle) }
        }
    }
#endif
