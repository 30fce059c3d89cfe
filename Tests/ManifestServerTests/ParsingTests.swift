import Testing

@testable import ManifestServer

@Suite("Parsing helpers")
struct ParsingTests {
    @Test("Range header resolves single ranges, suffixes and unsatisfiable requests")
    func rangeResolution() {
        #expect(RangeRequest.resolve(nil, size: 100) == .full)
        #expect(RangeRequest.resolve("bytes=10-19", size: 100) == .partial(ByteRange(start: 10, end: 19)))
        #expect(RangeRequest.resolve("bytes=90-", size: 100) == .partial(ByteRange(start: 90, end: 99)))
        #expect(RangeRequest.resolve("bytes=90-500", size: 100) == .partial(ByteRange(start: 90, end: 99)))
        #expect(RangeRequest.resolve("bytes=-10", size: 100) == .partial(ByteRange(start: 90, end: 99)))
        #expect(RangeRequest.resolve("bytes=-500", size: 100) == .partial(ByteRange(start: 0, end: 99)))
        #expect(RangeRequest.resolve("Bytes= 5-5 ", size: 100) == .partial(ByteRange(start: 5, end: 5)))
        #expect(RangeRequest.resolve("bytes=100-", size: 100) == .unsatisfiable)
        #expect(RangeRequest.resolve("bytes=-0", size: 100) == .unsatisfiable)
        #expect(RangeRequest.resolve("bytes=0-", size: 0) == .unsatisfiable)
        #expect(RangeRequest.resolve("bytes=99999999999999999999999-", size: 100) == .unsatisfiable)
        // Ignored headers mean "send it all".
        #expect(RangeRequest.resolve("bytes=0-1,5-6", size: 100) == .full)
        #expect(RangeRequest.resolve("bytes=20-10", size: 100) == .full)
        #expect(RangeRequest.resolve("items=0-1", size: 100) == .full)
        #expect(RangeRequest.resolve("bytes=a-b", size: 100) == .full)
    }

    @Test("HTTP dates format as IMF-fixdate and parse in all three forms")
    func httpDates() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == 784_111_777)
        #expect(HTTPDate.parse("yesterday") == nil)
        #expect(HTTPDate.parse("Sun, 06 Foo 1994 08:49:37 GMT") == nil)
    }

    @Test("Request heads parse; garbage is malformed")
    func requestHeads() throws {
        let head = Array("\r\nGET /a%20b?x=1 HTTP/1.1\r\nHost: h\r\nRange:  bytes=0-1 \r\n\r\n".utf8)
        let request = try HTTPRequest.parse(head[...])
        #expect(request.method == "GET")
        #expect(request.target == "/a%20b?x=1")
        #expect(request.header("range") == "bytes=0-1")
        #expect(request.header("HOST") == "h")

        for garbage in [
            "hello\r\n\r\n", "GET /\r\n\r\n", "GET / HTTP/2.0\r\n\r\n", "GET  / HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nNo colon here\r\n\r\n", "GET / HTTP/1.1\r\n folded: x\r\n\r\n",
            "G\u{1}T / HTTP/1.1\r\n\r\n",
        ] {
            #expect(throws: HTTPRequest.ReadError.malformed) { try HTTPRequest.parse(Array(garbage.utf8)[...]) }
        }
        #expect(HTTPRequest.headEnd(in: Array("GET / HTTP/1.1\n\nrest".utf8), from: 0) == 16)
    }

    @Test("Request targets decode before splitting, so encoded dot-dot is refused")
    func requestPaths() {
        #expect(RequestPath.decode("/maps/a%20b.json?v=1") == .segments(["maps", "a b.json"]))
        #expect(RequestPath.decode("http://example.com/x/./y") == .segments(["x", "y"]))
        #expect(RequestPath.decode("/../etc/passwd") == .refused)
        #expect(RequestPath.decode("/%2e%2e/etc/passwd") == .refused)
        #expect(RequestPath.decode("/a/..%2f..%2fetc") == .refused)
        #expect(RequestPath.decode("/a%00b") == .refused)
        #expect(RequestPath.decode("/%ff") == .refused)
        #expect(RequestPath.decode("/%zz") == .badRequest)
        #expect(RequestPath.decode("*") == .badRequest)
    }

    @Test("If-None-Match lists are split into entity tags")
    func entityTagLists() {
        #expect(Preconditions.entityTags("\"a\", W/\"b,c\" ,\"d\"") == ["\"a\"", "W/\"b,c\"", "\"d\""])
        #expect(Preconditions.entityTags(" * ") == nil)
    }

    @Test("Fault PRNG is a fixed sequence per seed; drops are used up only when they truncate")
    func faultState() {
        var a = FaultState(plan: FaultPlan(errorRate: 0.5, seed: 7))
        var b = FaultState(plan: FaultPlan(errorRate: 0.5, seed: 7))
        let first = (0..<64).map { _ in a.shouldInjectError() }
        #expect(first == (0..<64).map { _ in b.shouldInjectError() })
        #expect(first.contains(true) && first.contains(false))

        var drops = FaultState(plan: FaultPlan(dropAfterBytes: 10, dropCount: 1))
        #expect(drops.dropLimit(bodyLength: 5) == nil)  // too short to truncate: not counted
        #expect(drops.dropLimit(bodyLength: 50) == 10)
        #expect(drops.dropLimit(bodyLength: 50) == nil)  // dropCount used up
    }
}
