import Foundation
import ManifestServer
import Testing

@Suite("Statistics and log")
struct StatisticsTests {
    @Test("Statistics count requests, statuses and body bytes per path; reset clears them")
    func counting() async throws {
        let site = try TempSite()
        try site.write("a.bin", patternBytes(10_000))
        try site.write("m.json", Array("{}".utf8))
        try await withServer(site) { server, port async throws in
            _ = try await RawHTTP.request(port, "/a.bin")
            _ = try await RawHTTP.request(port, "/a.bin", headers: ["Range": "bytes=0-99"])
            _ = try await RawHTTP.request(port, "HEAD", "/a.bin")
            _ = try await RawHTTP.request(port, "/m.json")
            _ = try await RawHTTP.request(port, "/missing.bin")

            let stats = server.statistics
            #expect(stats.requests == 5)
            #expect(stats.bodyBytesSent == 10_000 + 100 + 2)
            #expect(stats.bodyBytesSentByPath == ["/a.bin": 10_100, "/m.json": 2])
            #expect(stats.statusCounts == [200: 3, 206: 1, 404: 1])

            server.resetStatistics()
            #expect(server.statistics == ServerStatistics())
            _ = try await RawHTTP.request(port, "/m.json")
            #expect(server.statistics.bodyBytesSent == 2)
        }
    }

    @Test("The log gets one line per request: method, path, status, body bytes")
    func logLines() async throws {
        let site = try TempSite()
        try site.write("dir/a.bin", patternBytes(5000))
        let log = LogCollector()
        try await withServer(site, log: log.sink) { _, port async throws in
            _ = try await RawHTTP.request(port, "/dir/a.bin", headers: ["Range": "bytes=0-1233"])
            _ = try await RawHTTP.request(port, "HEAD", "/dir/a.bin")
            _ = try await RawHTTP.request(port, "/nothing")
        }
        #expect(log.lines == ["GET /dir/a.bin 206 1234B", "HEAD /dir/a.bin 200 0B", "GET /nothing 404 14B"])
    }
}
