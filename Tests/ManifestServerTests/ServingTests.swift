import Foundation
import ManifestServer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Serving files")
struct ServingTests {
    @Test("GET through URLSession returns the exact file bytes and standard headers")
    func fullGetWithURLSession() async throws {
        let site = try TempSite()
        let bytes = patternBytes(300_000)
        try site.write("tiles/world.pmtiles", bytes)
        try await withServer(site) { _, port async throws in
            let url = URL(string: "http://127.0.0.1:\(port)/tiles/world.pmtiles")!
            let (data, response) = try await URLSession.shared.data(for: URLRequest(url: url))
            let http = try #require(response as? HTTPURLResponse)
            #expect(http.statusCode == 200)
            #expect(Array(data) == bytes)
            #expect(http.value(forHTTPHeaderField: "Content-Type") == "application/octet-stream")
            #expect(http.value(forHTTPHeaderField: "Accept-Ranges") == "bytes")
        }
    }

    @Test("Response head carries length, JSON type, validators and Connection: close")
    func responseHeaders() async throws {
        let site = try TempSite()
        let json = Array(#"{"version":1}"#.utf8)
        let file = try site.write("manifest.json", json)
        let mtime = try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date)
        try await withServer(site) { _, port async throws in
            let response = try await RawHTTP.request(port, "/manifest.json")
            #expect(response.status == 200)
            #expect(response.body == json)
            #expect(response.contentLength == json.count)
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.header("Connection") == "close")
            let etag = try #require(response.header("ETag"))
            #expect(etag.hasPrefix("\"\(String(json.count, radix: 16))-") && etag.hasSuffix("\""))
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            #expect(response.header("Last-Modified") == formatter.string(from: mtime))
        }
    }

    @Test("HEAD has the GET headers and no body")
    func head() async throws {
        let site = try TempSite()
        try site.write("a.bin", patternBytes(12_345))
        try await withServer(site) { _, port async throws in
            let response = try await RawHTTP.request(port, "HEAD", "/a.bin")
            #expect(response.status == 200)
            #expect(response.contentLength == 12_345)
            #expect(response.body.isEmpty)
        }
    }

    @Test("Missing files and directories are 404")
    func notFound() async throws {
        let site = try TempSite()
        try site.write("dir/inner.bin", [1, 2, 3])
        try await withServer(site) { _, port async throws in
            #expect(try await RawHTTP.request(port, "/nope.bin").status == 404)
            #expect(try await RawHTTP.request(port, "/dir").status == 404)
            #expect(try await RawHTTP.request(port, "/dir/").status == 404)
            #expect(try await RawHTTP.request(port, "/").status == 404)
            #expect(try await RawHTTP.request(port, "/dir/inner.bin").body == [1, 2, 3])
        }
    }

    @Test("Percent-encoded names are decoded")
    func percentDecoding() async throws {
        let site = try TempSite()
        try site.write("my map.json", [7])
        try await withServer(site) { _, port async throws in
            #expect(try await RawHTTP.request(port, "/my%20map.json?cache=no").body == [7])
        }
    }

    @Test("Other methods are 405 with Allow")
    func methodNotAllowed() async throws {
        let site = try TempSite()
        try site.write("a.bin", [1])
        try await withServer(site) { _, port async throws in
            for method in ["POST", "PUT", "DELETE", "OPTIONS"] {
                let response = try await RawHTTP.request(port, method, "/a.bin")
                #expect(response.status == 405)
                #expect(response.header("Allow") == "GET, HEAD")
            }
        }
    }

    @Test("Garbage is 400 and an oversized head is 431")
    func badRequests() async throws {
        let site = try TempSite()
        try site.write("a.bin", [1])
        try await withServer(site) { _, port async throws in
            #expect(try await RawHTTP.send(port, "NOT HTTP AT ALL\r\n\r\n").status == 400)
            #expect(try await RawHTTP.send(port, "GET /a.bin HTTP/1.1\r\nbad header\r\n\r\n").status == 400)
            #expect(try await RawHTTP.send(port, "GET /%zz HTTP/1.1\r\n\r\n").status == 400)
            // The start of a TLS ClientHello (a client given https://): 400 at once, not 408
            // after the head timeout.
            #expect(try await RawHTTP.send(port, "\u{16}\u{03}\u{01}\u{00}\u{a5}\u{01}\u{00}").status == 400)
            let huge = "GET /a.bin HTTP/1.1\r\nX-Pad: \(String(repeating: "x", count: 20_000))\r\n\r\n"
            #expect(try await RawHTTP.send(port, huge).status == 431)
            // A head split across several TCP segments just under the limit is fine.
            let big = "GET /a.bin HTTP/1.1\r\nX-Pad: \(String(repeating: "y", count: 15_000))\r\n\r\n"
            #expect(try await RawHTTP.send(port, big).status == 200)
        }
    }
}
