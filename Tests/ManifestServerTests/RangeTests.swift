import Foundation
import ManifestServer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Range requests")
struct RangeTests {
    let bytes = patternBytes(10_000, seed: 3)

    @Test("A closed range is 206 with Content-Range and exactly those bytes")
    func closedRange() async throws {
        let site = try TempSite()
        try site.write("a.bin", bytes)
        try await withServer(site) { _, port async throws in
            let response = try await RawHTTP.request(port, "/a.bin", headers: ["Range": "bytes=100-1099"])
            #expect(response.status == 206)
            #expect(response.header("Content-Range") == "bytes 100-1099/10000")
            #expect(response.contentLength == 1000)
            #expect(response.body == Array(bytes[100...1099]))
        }
    }

    @Test("Open-ended and suffix ranges")
    func openAndSuffixRanges() async throws {
        let site = try TempSite()
        try site.write("a.bin", bytes)
        try await withServer(site) { _, port async throws in
            let open = try await RawHTTP.request(port, "/a.bin", headers: ["Range": "bytes=9000-"])
            #expect(open.status == 206)
            #expect(open.header("Content-Range") == "bytes 9000-9999/10000")
            #expect(open.body == Array(bytes[9000...]))

            let suffix = try await RawHTTP.request(port, "/a.bin", headers: ["Range": "bytes=-16"])
            #expect(suffix.status == 206)
            #expect(suffix.header("Content-Range") == "bytes 9984-9999/10000")
            #expect(suffix.body == Array(bytes.suffix(16)))
        }
    }

    @Test("URLSession range request gets 206 and the bytes")
    func urlSessionRange() async throws {
        let site = try TempSite()
        try site.write("a.bin", bytes)
        try await withServer(site) { _, port async throws in
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/a.bin")!)
            request.setValue("bytes=-100", forHTTPHeaderField: "Range")
            let (data, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 206)
            #expect(Array(data) == Array(bytes.suffix(100)))
        }
    }

    @Test("A range starting past the end is 416 with bytes */size")
    func unsatisfiable() async throws {
        let site = try TempSite()
        try site.write("a.bin", bytes)
        try await withServer(site) { _, port async throws in
            let response = try await RawHTTP.request(port, "/a.bin", headers: ["Range": "bytes=10000-"])
            #expect(response.status == 416)
            #expect(response.header("Content-Range") == "bytes */10000")
        }
    }

    @Test("Multiple ranges are answered with the full file")
    func multiRange() async throws {
        let site = try TempSite()
        try site.write("a.bin", bytes)
        try await withServer(site) { _, port async throws in
            let response = try await RawHTTP.request(port, "/a.bin", headers: ["Range": "bytes=0-1,5-6"])
            #expect(response.status == 200)
            #expect(response.body == bytes)
        }
    }

    @Test("If-Range honours the range only when the validator matches")
    func ifRange() async throws {
        let site = try TempSite()
        try site.write("a.bin", bytes)
        try await withServer(site) { _, port async throws in
            let plain = try await RawHTTP.request(port, "HEAD", "/a.bin")
            let etag = try #require(plain.header("ETag"))
            let lastModified = try #require(plain.header("Last-Modified"))

            let matching = try await RawHTTP.request(port, "/a.bin", headers: ["Range": "bytes=0-9", "If-Range": etag])
            #expect(matching.status == 206)
            #expect(matching.body == Array(bytes[0...9]))

            let byDate = try await RawHTTP.request(
                port, "/a.bin",
                headers: ["Range": "bytes=0-9", "If-Range": lastModified])
            #expect(byDate.status == 206)

            let stale = try await RawHTTP.request(
                port, "/a.bin",
                headers: ["Range": "bytes=0-9", "If-Range": "\"0-0\""])
            #expect(stale.status == 200)
            #expect(stale.body == bytes)

            let weak = try await RawHTTP.request(port, "/a.bin", headers: ["Range": "bytes=0-9", "If-Range": "W/\(etag)"])
            #expect(weak.status == 200)

            let oldDate = try await RawHTTP.request(
                port, "/a.bin",
                headers: ["Range": "bytes=0-9", "If-Range": "Sun, 06 Nov 1994 08:49:37 GMT"])
            #expect(oldDate.status == 200)
        }
    }
}

@Suite("Conditional requests")
struct ConditionalTests {
    @Test("If-None-Match with the ETag or * is 304 without a body")
    func ifNoneMatch() async throws {
        let site = try TempSite()
        try site.write("m.json", Array("{}".utf8))
        try await withServer(site) { _, port async throws in
            let etag = try #require(try await RawHTTP.request(port, "HEAD", "/m.json").header("ETag"))

            let hit = try await RawHTTP.request(port, "/m.json", headers: ["If-None-Match": "\"other\", \(etag)"])
            #expect(hit.status == 304)
            #expect(hit.body.isEmpty)
            #expect(hit.header("ETag") == etag)

            #expect(try await RawHTTP.request(port, "/m.json", headers: ["If-None-Match": "*"]).status == 304)
            #expect(try await RawHTTP.request(port, "/m.json", headers: ["If-None-Match": "W/\(etag)"]).status == 304)
            #expect(try await RawHTTP.request(port, "/m.json", headers: ["If-None-Match": "\"other\""]).status == 200)
        }
    }

    @Test("If-Modified-Since not older than the file is 304, older is 200, ignored beside If-None-Match")
    func ifModifiedSince() async throws {
        let site = try TempSite()
        try site.write("m.json", Array("{}".utf8))
        try await withServer(site) { _, port async throws in
            let lastModified = try #require(try await RawHTTP.request(port, "HEAD", "/m.json").header("Last-Modified"))
            #expect(try await RawHTTP.request(port, "/m.json", headers: ["If-Modified-Since": lastModified]).status == 304)
            let old = "Sun, 06 Nov 1994 08:49:37 GMT"
            #expect(try await RawHTTP.request(port, "/m.json", headers: ["If-Modified-Since": old]).status == 200)
            let both = ["If-Modified-Since": lastModified, "If-None-Match": "\"other\""]
            #expect(try await RawHTTP.request(port, "/m.json", headers: both).status == 200)
        }
    }
}
