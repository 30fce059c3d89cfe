import Foundation
import MapTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `maploader serve` at the end of its resources (issue "Hostile signed payloads", case
/// 10): a spawned server with a real descriptor limit (`prlimit`), and a real client that
/// stops reading.
@Suite struct ServeLimitsTests {
    /// A blocking TCP client socket on 127.0.0.1, its receives giving up after 5 s.
    final class Client {
        let fd: Int32

        init?(port: Int, receiveBuffer: Int32? = nil) {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return nil }
            if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                close(fd)
                return nil
            }
        }

        deinit { close(fd) }

        func write(_ text: String) { _ = text.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) } }

        /// The status code of the response, `nil` when none came within the timeout.
        func status() -> Int? {
            var buffer = [UInt8](repeating: 0, count: 256)
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 12 else { return nil }
            return Int(String(decoding: buffer[9..<12], as: UTF8.self))
        }
    }

    /// Starts `maploader serve` on `site` (with `parent`, e.g. a resource limit); returns
    /// the process, its stderr file and its port.
    static func serve(_ site: URL, _ extra: [String] = [], parent: [String] = []) throws -> (Process, URL, Int) {
        let (process, output, errors) = try CLI.start(["serve", site.path, "--port", "0", "--json"] + extra, parent: parent)
        for _ in 0..<500 {
            if let text = try? Data(contentsOf: output),
                let object = try? JSONSerialization.jsonObject(with: text) as? [String: Any],
                let port = object["port"] as? Int
            {
                return (process, errors, port)
            }
            usleep(20_000)
        }
        process.terminate()
        throw CocoaError(.fileReadUnknown)
    }

    /// Out of descriptors, the server answers 503 (with Retry-After) for a file that
    /// exists: it once answered 404, which clients read as "missing" (no next root, no
    /// patch). With room again, it serves the file.
    @Test func outOfDescriptorsIsA503NotA404() throws {
        let site = TemporaryDirectory("serve-limits")
        try Data("{}".utf8).write(to: site.path("catalog.json"))
        let (process, errors, port) = try Self.serve(site.url, ["--head-timeout", "60"], parent: ["prlimit", "--nofile=40:40"])
        defer { process.terminate() }
        var idle: [Client] = []
        var statuses: [Int?] = []
        for _ in 0..<60 {
            guard let client = Client(port: port) else { break }
            client.write("GET /catalog.json HTTP/1.1\r\nHost: x\r\n\r\n")
            let status = client.status()
            statuses.append(status)
            guard status == 200 else { break }
            // One more connection that never finishes its request holds one more descriptor.
            guard let holder = Client(port: port) else { break }
            holder.write("GET /catalog.json HTTP/1.1\r\n")
            idle.append(holder)
            usleep(20_000)
        }
        #expect(statuses.last == 503, "statuses \(statuses), stderr: \((try? String(contentsOf: errors, encoding: .utf8)) ?? "")")
        #expect(!statuses.contains(404))
        idle.removeAll()
        var again: Int?
        for _ in 0..<100 where again != 200 {
            usleep(50_000)
            let client = Client(port: port)
            client?.write("GET /catalog.json HTTP/1.1\r\nHost: x\r\n\r\n")
            again = client?.status()
        }
        #expect(again == 200)
    }

    /// A client that asks for a large file and never reads holds a thread and two
    /// descriptors for as long as it likes, unless sends time out: with `--send-timeout 1`
    /// the server closes it and logs `client-gone`.
    @Test func aClientThatNeverReadsIsCutAtTheSendTimeout() throws {
        let site = TemporaryDirectory("serve-limits")
        try Data("{}".utf8).write(to: site.path("catalog.json"))
        try Data(count: 64 << 20).write(to: site.path("big.bin"))
        let (process, errors, port) = try Self.serve(site.url, ["--send-timeout", "1"])
        defer { process.terminate() }
        let client = try #require(Client(port: port, receiveBuffer: 4096))
        client.write("GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
        var log = ""
        for _ in 0..<300 where !log.contains("GET /big.bin") {
            usleep(100_000)
            log = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        }
        #expect(log.contains("GET /big.bin 200") && log.contains("client-gone"), "\(log)")
        withExtendedLifetime(client) {}
    }
}
