import Foundation
import ManifestServer
import Testing

@Suite("Large files and concurrency")
struct LoadTests {
    /// Runs in a child process (an exit test): the resident size it watches must not
    /// include what other tests running in parallel allocate.
    @Test("A 50 MB file streams byte-identical without the server holding it in memory")
    func largeFile() async {
        await #expect(processExitsWith: .success) {
            guard try await LoadTests.streamLargeFile() else { exit(EXIT_FAILURE) }
        }
    }

    /// Serves a 50 MB file and checks bytes, the count and the memory growth.
    static func streamLargeFile() async throws -> Bool {
        let site = try TempSite()
        let file = site.root.appendingPathComponent("planet.pmtiles")
        let size = 50 * 1024 * 1024
        guard FileManager.default.createFile(atPath: file.path, contents: nil) else { return false }
        let writer = try FileHandle(forWritingTo: file)
        for block in 0..<(size / (1024 * 1024)) { try writer.write(contentsOf: patternBytes(1024 * 1024, seed: UInt64(block))) }
        try writer.close()
        let server = ManifestServer(root: site.root)
        let port = try server.start()
        defer { server.stop() }
        let baseline = residentBytes()
        let sampler = PeakMemorySampler()
        let result = try await streamAndCompare(port: port, path: "/planet.pmtiles", with: file)
        let peak = sampler.stop()
        // Loading the file into memory would add 50 MB; streaming adds a few 256 KiB chunks.
        return result.status == 200 && result.bodyLength == Int64(size) && result.identical
            && server.statistics.bodyBytesSent == Int64(size) && peak - baseline < 25 * 1024 * 1024
    }

    @Test("A stalled client does not block other clients")
    func stalledClientDoesNotBlockOthers() async throws {
        let site = try TempSite()
        let bytes = patternBytes(50_000, seed: 5)
        try site.write("a.bin", bytes)
        try await withServer(site) { _, port async throws in
            // Half a request that never ends: a server serving one connection at a time
            // would wait on it forever (until its read timeout), and the requests below would hang.
            let stalled = try RawHTTP.connect(port)
            defer { close(stalled) }
            _ = "GET /a.bin HTTP/1.1\r\nHost: x\r\n".withCString { send(stalled, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            let bodies = try await withThrowingTaskGroup(of: [UInt8].self) { group in
                for _ in 0..<4 { group.addTask { try await RawHTTP.request(port, "/a.bin").body } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(bodies.count == 4)
            #expect(bodies.allSatisfy { $0 == bytes })
        }
    }

    @Test("Many simultaneous connections all get their file")
    func manyConnections() async throws {
        let site = try TempSite()
        for i in 0..<16 { try site.write("f\(i).bin", patternBytes(20_000, seed: UInt64(i))) }
        try await withServer(site) { server, port async throws in
            let ok = try await withThrowingTaskGroup(of: Bool.self) { group in
                for n in 0..<64 {
                    group.addTask {
                        let i = n % 16
                        return try await RawHTTP.request(port, "/f\(i).bin").body == patternBytes(20_000, seed: UInt64(i))
                    }
                }
                return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
            }
            #expect(ok == 64)
            #expect(server.statistics.statusCounts[200] == 64)
        }
    }
}
