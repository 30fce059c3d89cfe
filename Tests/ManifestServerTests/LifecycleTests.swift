import Foundation
import ManifestServer
import Testing

@Suite("Start and stop")
struct LifecycleTests {
    @Test("start binds an ephemeral port once; stop is idempotent and closes the listener")
    func startAndStop() async throws {
        let site = try TempSite()
        try site.write("a.bin", [1])
        let server = ManifestServer(root: site.root)
        let port = try server.start()
        #expect(port > 0)
        #expect(throws: ManifestServerError.alreadyStarted) { try server.start() }
        #expect(try await RawHTTP.request(port, "/a.bin").body == [1])
        server.stop()
        server.stop()
        await #expect(throws: RawHTTPError.self) { try await RawHTTP.request(port, "/a.bin") }
    }

    @Test("A missing root folder fails start")
    func missingRoot() throws {
        let site = try TempSite()
        let server = ManifestServer(root: site.root.appendingPathComponent("nope"))
        #expect(throws: ManifestServerError.self) { try server.start() }
        let file = try site.write("file.bin", [1])
        #expect(throws: ManifestServerError.self) { try ManifestServer(root: file).start() }
    }

    @Test("The same port can be bound again right after a server that served requests stops")
    func reuseAddress() async throws {
        let site = try TempSite()
        try site.write("a.bin", [1])
        let first = ManifestServer(root: site.root)
        let port = try first.start()
        for _ in 0..<3 { _ = try await RawHTTP.request(port, "/a.bin") }  // leaves TIME_WAIT sockets
        first.stop()
        let second = ManifestServer(root: site.root, port: port)
        defer { second.stop() }
        #expect(try second.start() == port)
        #expect(try await RawHTTP.request(port, "/a.bin").body == [1])
    }

    @Test("stop() cuts an in-flight download: the client gets a short body, not the whole file")
    func stopCutsConnections() async throws {
        let site = try TempSite()
        try site.write("big.bin", patternBytes(5_000_000))
        // 20 kB/s: the whole body would take ~250 s, so a short body can only come from stop()
        // (1 MB, ~50 s, once all went out before a starved test task saw the first byte).
        let server = ManifestServer(root: site.root, faults: FaultPlan(bytesPerSecond: 20_000))
        let port = try server.start()
        let download = Task { try await RawHTTP.request(port, "/big.bin") }
        // Wait until the body is flowing, however loaded the machine is (the bound only keeps
        // a broken server from hanging the suite; it is no speed requirement).
        var polls = 0
        while server.statistics.bodyBytesSent == 0, polls < 6_000 {
            try await Task.sleep(for: .milliseconds(20))
            polls += 1
        }
        #expect(server.statistics.bodyBytesSent > 0, "the body never started flowing")
        server.stop()
        let response = try await download.value
        #expect(response.status == 200)
        #expect(response.body.count < 5_000_000, "stop() should cut the body short")
    }

    @Test("A client hanging up mid-body does not crash the server")
    func clientDisconnect() async throws {
        let site = try TempSite()
        try site.write("big.bin", patternBytes(8_000_000))
        let log = LogCollector()
        try await withServer(site, log: log.sink) { _, port async throws in
            try await RawHTTP.onThread {
                let fd = try RawHTTP.connect(port)
                let request = Array("GET /big.bin HTTP/1.1\r\n\r\n".utf8)
                _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                var buffer = [UInt8](repeating: 0, count: 1024)
                _ = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                close(fd)  // unread data: the kernel resets the connection
            }
            // Poll until the server logs the hang-up (the bound only keeps a broken server from
            // hanging the suite).
            var polls = 0
            while !log.lines.contains(where: { $0.hasSuffix("client-gone") }), polls < 6_000 {
                try await Task.sleep(for: .milliseconds(20))
                polls += 1
            }
            #expect(log.lines.contains { $0.hasPrefix("GET /big.bin 200 ") && $0.hasSuffix("client-gone") })
            #expect(try await RawHTTP.request(port, "HEAD", "/big.bin").status == 200)
        }
    }

    @Test("Clients dribbling their request head a byte at a time are cut off at the head deadline; others are served")
    func dribblingHeadsAreClosed() async throws {
        let site = try TempSite()
        try site.write("a.bin", [7])
        let server = ManifestServer(root: site.root, headTimeout: 0.3)
        let port = try server.start()
        defer { server.stop() }
        let clients = 20
        // Each client sends one byte of a request every 50 ms and would never finish.
        let answers = try await RawHTTP.onThread { () -> [String] in
            let fds = try (0..<clients).map { _ in try RawHTTP.connect(port) }
            defer { for fd in fds { _ = Glibc.close(fd) } }
            let request = Array("GET /a.bin HTTP/1.1\r\nHost: x\r\nX-Padding: \(String(repeating: "p", count: 400))\r\n\r\n".utf8)
            var answers = [String?](repeating: nil, count: clients)
            var sent = 0
            while answers.contains(where: { $0 == nil }), sent < request.count - 1 {
                for (i, fd) in fds.enumerated() where answers[i] == nil {
                    _ = request.withUnsafeBytes { send(fd, $0.baseAddress! + sent, 1, Int32(MSG_NOSIGNAL)) }
                    var probe = [UInt8](repeating: 0, count: 512)
                    let n = probe.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                    if n > 0 { answers[i] = String(decoding: probe[0..<n], as: UTF8.self) }
                    if n == 0 { answers[i] = "closed" }
                }
                sent += 1
                usleep(50_000)
            }
            return answers.map { $0 ?? "still open" }
        }
        #expect(answers.allSatisfy { $0.hasPrefix("HTTP/1.1 408") || $0 == "closed" }, "\(answers)")
        // A client that sends its request at once is served meanwhile and after.
        #expect(try await RawHTTP.request(port, "/a.bin").body == [7])
    }
}
