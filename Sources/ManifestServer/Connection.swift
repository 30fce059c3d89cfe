/// Serves one accepted connection: reads a single request, answers it, closes.
struct Connection: Sendable {
    let fd: Int32
    /// Canonical path of the served folder.
    let root: String
    let server: ManifestServer

    /// What was sent, for the log line.
    private struct Summary {
        var method = "-"
        var path = "-"
        var status = 0
        var bodyBytes: Int64 = 0
        var note: String?
    }

    func run() {
        Socket.setSendTimeout(fd, .milliseconds(Int64(server.sendTimeout * 1000)))
        var summary = Summary()
        switch HTTPRequest.read(from: fd, within: .milliseconds(Int64(server.headTimeout * 1000))) {
        case .failure(.connectionClosed):
            return
        case .failure(.headTimeout):
            summary.note = "head-timeout"
            sendSimple(408, head: false, summary: &summary)
        case .failure(.headTooLarge):
            sendSimple(431, head: false, summary: &summary)
        case .failure(.malformed):
            sendSimple(400, head: false, summary: &summary)
        case .success(let request):
            summary.method = request.method
            summary.path = request.target
            respond(to: request, summary: &summary)
        }
        server.emitLog(
            "\(summary.method) \(summary.path) \(summary.status) \(summary.bodyBytes)B"
                + (summary.note.map { " \($0)" } ?? ""))
        closeGracefully()
    }

    private func respond(to request: HTTPRequest, summary: inout Summary) {
        let isHead = request.method == "HEAD"
        guard request.method == "GET" || isHead else {
            return sendSimple(405, head: false, extra: [("Allow", "GET, HEAD")], summary: &summary)
        }
        if let location = server.faults.redirect?.location(for: request.target) {
            summary.note = "redirected"
            return sendSimple(302, head: isHead, extra: [("Location", location)], summary: &summary)
        }
        let path = RequestPath.decode(request.target)
        switch path {
        case .badRequest:
            return sendSimple(400, head: isHead, summary: &summary)
        case .refused:
            return sendSimple(404, head: isHead, summary: &summary)
        case .segments(let segments):
            summary.path = path.displayPath ?? request.target
            let file: ServedFile
            switch ServedFile.open(segments: segments, root: root) {
            case .file(let opened): file = opened
            case .missing: return sendSimple(404, head: isHead, summary: &summary)
            case .unavailable:
                summary.note = "out-of-descriptors"
                return sendSimple(503, head: isHead, extra: [("Retry-After", "1")], summary: &summary)
            }
            defer { file.close() }
            serve(file, request: request, isHead: isHead, summary: &summary)
        }
    }

    private func serve(_ file: ServedFile, request: HTTPRequest, isHead: Bool, summary: inout Summary) {
        let validators = file.validators
        var headers: [(name: String, value: String)] = [
            ("Last-Modified", HTTPDate.format(validators.lastModified)),
            ("ETag", validators.etag),
            ("Accept-Ranges", "bytes"),
        ]
        if Preconditions.isNotModified(request, validators) {
            summary.status = 304
            server.recordResponse(status: 304)
            _ = Socket.sendAll(fd, HTTPResponseHead(status: 304, headers: headers).serialized())
            return
        }

        var range = RangeRequest.resolve(request.header("Range"), size: file.size)
        if range != .full && !Preconditions.allowsRange(request, validators) { range = .full }
        let status: Int
        let offset: Int64
        let length: Int64
        switch range {
        case .unsatisfiable:
            return sendSimple(
                416, head: isHead, extra: headers + [("Content-Range", "bytes */\(file.size)")],
                summary: &summary)
        case .full:
            (status, offset, length) = (200, 0, file.size)
        case .partial(let span):
            (status, offset, length) = (206, span.start, span.length)
            headers.append(("Content-Range", "bytes \(span.start)-\(span.end)/\(file.size)"))
        }

        if !isHead, let endless = server.faults.endless, endless.applies(to: summary.path) {
            return sendEndless(file, endless.framing, headers: headers, summary: &summary)
        }
        var dropAfter: Int64?
        if !isHead {
            switch server.decideFaults(bodyLength: length) {
            case .injectError(let errorStatus):
                summary.note = "injected-error"
                return sendSimple(errorStatus, head: false, summary: &summary)
            case .send(let limit):
                dropAfter = limit
            }
        }

        headers += [("Content-Type", file.contentType), ("Content-Length", String(length))]
        summary.status = status
        server.recordResponse(status: status)
        guard Socket.sendAll(fd, HTTPResponseHead(status: status, headers: headers).serialized()), !isHead else {
            return
        }
        let faults = server.faults
        let streamer = BodyStreamer(
            file: file, socket: fd, offset: offset, length: length, dropAfter: dropAfter,
            corruptOffset: faults.corruptOffset, bytesPerSecond: faults.bytesPerSecond)
        let displayPath = summary.path
        let (sent, outcome) = streamer.stream { server.recordBodyBytes($0, path: displayPath) }
        summary.bodyBytes = sent
        switch outcome {
        case .complete: break
        case .dropped: summary.note = "dropped"
        case .clientGone: summary.note = "client-gone"
        case .fileShrunk: summary.note = "file-shrunk"
        }
    }

    /// Sends `file`'s bytes and then `A`s, framed as `framing` says, until the client goes
    /// away or the server stops (which shuts the socket down).
    private func sendEndless(
        _ file: ServedFile, _ framing: EndlessBody.Framing, headers: [(name: String, value: String)],
        summary: inout Summary
    ) {
        var head = headers + [("Content-Type", file.contentType)]
        switch framing {
        case .unannounced: break
        case .chunked: head.append(("Transfer-Encoding", "chunked"))
        case .announced(let length): head.append(("Content-Length", String(length)))
        }
        summary.status = 200
        summary.note = "endless"
        server.recordResponse(status: 200)
        guard Socket.sendAll(fd, HTTPResponseHead(status: 200, headers: head).serialized()) else { return }
        let filler = [UInt8](repeating: 0x41, count: BodyStreamer.chunkSize)
        var body = filler
        _ = body.withUnsafeMutableBytes { file.read(into: $0, count: $0.count, at: 0) }  // the file's bytes come first
        while true {
            defer { body = filler }
            var frame = body
            if framing == .chunked {
                frame = Array(String(body.count, radix: 16).utf8) + [13, 10] + body + [13, 10]
            }
            guard Socket.sendAll(fd, frame) else { return }
            summary.bodyBytes += Int64(body.count)
            server.recordBodyBytes(Int64(body.count), path: summary.path)
        }
    }

    /// Sends a short text/plain response (headers only for HEAD).
    private func sendSimple(
        _ status: Int, head: Bool, extra: [(name: String, value: String)] = [],
        summary: inout Summary
    ) {
        let body = Array("\(status) \(HTTPResponseHead.reason(for: status))\n".utf8)
        let response = HTTPResponseHead(
            status: status,
            headers: extra + [
                ("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", String(body.count)),
            ])
        summary.status = status
        server.recordResponse(status: status)
        guard Socket.sendAll(fd, response.serialized()), !head else { return }
        if Socket.sendAll(fd, body) { summary.bodyBytes = Int64(body.count) }
    }

    /// Half-closes, then reads (briefly) until the client closes, so that unread request
    /// bytes do not make the kernel reset the connection before the client has read it all.
    private func closeGracefully() {
        Socket.shutdownWrite(fd)
        // Drain what the peer still sends, for 2 s at most in all.
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(2)
        var scratch = [UInt8](repeating: 0, count: 4096)
        var drained = 0
        while drained < 1 << 20 {
            let left = deadline - clock.now
            guard left > .zero else { break }
            Socket.setReceiveTimeout(fd, left)
            let n = scratch.withUnsafeMutableBytes { Socket.receive(fd, into: $0) }
            if n <= 0 { break }
            drained += n
        }
    }
}
