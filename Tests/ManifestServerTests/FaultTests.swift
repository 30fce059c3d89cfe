import Foundation
import ManifestServer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Fault injection")
struct FaultTests {
    let bytes = patternBytes(10_000, seed: 9)

    @Test("dropAfterBytes cuts the body after exactly that many bytes, for dropCount responses")
    func dropAfterBytes() async throws {
        let site = try TempSite()
        try site.write("a.bin", bytes)
        let faults = FaultPlan(dropAfterBytes: 1000, dropCount: 2)
        try await withServer(site, faults: faults) { server, port async throws in
            let first = try await RawHTTP.request(port, "/a.bin")
            #expect(first.status == 200)
            #expect(first.contentLength == 10_000)
            #expect(first.body == Array(bytes[0..<1000]))

            let ranged = try await RawHTTP.request(port, "/a.bin", headers: ["Range": "bytes=5000-"])
            #expect(ranged.status == 206)
            #expect(ranged.body == Array(bytes[5000..<6000]))

            // HEAD and short bodies are not truncated and do not use up the drop count.
            #expect(try await RawHTTP.request(port, "HEAD", "/a.bin").status == 200)
            #expect(try await RawHTTP.request(port, "/a.bin", headers: ["Range": "bytes=0-99"]).body.count == 100)

            let third = try await RawHTTP.request(port, "/a.bin")
            #expect(third.body == bytes)
            #expect(server.statistics.droppedResponses == 2)
            #expect(server.statistics.bodyBytesSent == 1000 + 1000 + 100 + 10_000)
        }
    }

    @Test("URLSession sees a dropped response as an error or a short body")
    func dropSeenByURLSession() async throws {
        let site = try TempSite()
        try site.write("a.bin", bytes)
        try await withServer(site, faults: FaultPlan(dropAfterBytes: 4096)) { _, port async throws in
            let url = URL(string: "http://127.0.0.1:\(port)/a.bin")!
            do {
                let (data, _) = try await URLSession.shared.data(for: URLRequest(url: url))
                #expect(data.count < bytes.count)
            } catch {
                // The expected outcome: the transfer ended before Content-Length bytes.
            }
        }
    }

    @Test("errorRate 1 answers every eligible GET with errorStatus; HEAD and 404 are untouched")
    func errorRateOne() async throws {
        let site = try TempSite()
        try site.write("a.bin", bytes)
        try await withServer(site, faults: FaultPlan(errorRate: 1)) { server, port async throws in
            for _ in 0..<5 {
                #expect(try await RawHTTP.request(port, "/a.bin").status == 503)
            }
            #expect(try await RawHTTP.request(port, "/a.bin", headers: ["Range": "bytes=0-9"]).status == 503)
            #expect(try await RawHTTP.request(port, "HEAD", "/a.bin").status == 200)
            #expect(try await RawHTTP.request(port, "/missing").status == 404)
            #expect(server.statistics.injectedErrors == 6)
            #expect(server.statistics.bodyBytesSent == 0)
        }
    }

    @Test("A fractional errorRate follows the seed: same seed, same statuses")
    func errorRateIsDeterministic() async throws {
        let site = try TempSite()
        try site.write("a.bin", bytes)
        let faults = FaultPlan(errorRate: 0.5, errorStatus: 500, seed: 42)
        func statuses() async throws -> [Int] {
            try await withServer(site, faults: faults) { _, port async throws in
                var result: [Int] = []
                for _ in 0..<24 { result.append(try await RawHTTP.request(port, "/a.bin").status) }
                return result
            }
        }
        let first = try await statuses()
        #expect(first.contains(500) && first.contains(200))
        #expect(Set(first) == [200, 500])
        #expect(try await statuses() == first)
    }

    @Test("corruptOffset flips exactly that file byte in every body containing it")
    func corruptOffset() async throws {
        let site = try TempSite()
        try site.write("a.bin", bytes)
        try await withServer(site, faults: FaultPlan(corruptOffset: 1234)) { _, port async throws in
            let full = try await RawHTTP.request(port, "/a.bin")
            #expect(full.body.count == bytes.count)
            let differing = full.body.indices.filter { full.body[$0] != bytes[$0] }
            #expect(differing == [1234])
            #expect(full.body[1234] == bytes[1234] ^ 0xFF)

            let covering = try await RawHTTP.request(port, "/a.bin", headers: ["Range": "bytes=1000-1999"])
            #expect(covering.body.indices.filter { covering.body[$0] != bytes[1000 + $0] } == [234])

            let elsewhere = try await RawHTTP.request(port, "/a.bin", headers: ["Range": "bytes=2000-2999"])
            #expect(elsewhere.body == Array(bytes[2000...2999]))
        }
    }

    @Test("bytesPerSecond paces the body: an unthrottled copy finishes while the throttled one has sent under half")
    func throttle() async throws {
        let site = try TempSite()
        try site.write("a.bin", patternBytes(1_000_000))
        // At 4 kB/s the throttled body takes about 250 s; the same file unthrottled takes
        // milliseconds (seconds on a machine busy with other test runs). Order, not time: when
        // the unthrottled download is complete, the throttled server must still be far from
        // done (a broken throttle would have sent it all).
        let fast = ManifestServer(root: site.root)
        let fastPort = try fast.start()
        defer { fast.stop() }
        try await withServer(site, faults: FaultPlan(bytesPerSecond: 4_000)) { slow, port async throws in
            let throttled = Task { try await RawHTTP.request(port, "/a.bin") }
            var polls = 0  // (bounded only so a broken server fails instead of hanging)
            while slow.statistics.bodyBytesSent == 0, polls < 6_000 {
                try await Task.sleep(for: .milliseconds(5))
                polls += 1
            }
            let whole = try await RawHTTP.request(fastPort, "/a.bin")
            let sentByThen = slow.statistics.bodyBytesSent
            #expect(whole.body.count == 1_000_000)
            #expect(sentByThen > 0 && sentByThen < 500_000, "the throttled server had sent \(sentByThen) bytes")
            slow.stop()
            _ = try? await throttled.value
        }
    }
}
