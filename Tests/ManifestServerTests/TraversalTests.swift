import Foundation
import ManifestServer
import Testing

@Suite("Never serving outside root")
struct TraversalTests {
    /// A site whose parent folder holds `secret.txt`, i.e. a real file one `..` away.
    private func siteWithSecret() throws -> (TempSite, [UInt8]) {
        let site = try TempSite()
        let secret = Array("TOP SECRET".utf8)
        try Data(secret).write(to: site.parent.appendingPathComponent("secret.txt"))
        try site.write("inside/ok.bin", [42])
        return (site, secret)
    }

    @Test(
        "Dot-dot in any spelling is 404 and never returns the outside file",
        arguments: [
            "/../secret.txt", "/inside/../../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E/secret.txt",
            "/inside/..%2f..%2fsecret.txt", "/..%2fsecret.txt", "/../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd",
            "http://127.0.0.1/../secret.txt",
        ])
    func dotDot(target: String) async throws {
        let (site, secret) = try siteWithSecret()
        try await withServer(site) { _, port async throws in
            let response = try await RawHTTP.request(port, target)
            #expect(response.status == 404)
            #expect(!String(decoding: response.body, as: UTF8.self).contains("SECRET"))
            #expect(response.body != secret)
            #expect(!String(decoding: response.body, as: UTF8.self).contains("root:"))
            // The same server does serve files inside root.
            #expect(try await RawHTTP.request(port, "/inside/ok.bin").body == [42])
        }
    }

    @Test("Symlinks leading outside root are 404; symlinks inside root are followed")
    func symlinks() async throws {
        let (site, _) = try siteWithSecret()
        let manager = FileManager.default
        try manager.createSymbolicLink(
            at: site.root.appendingPathComponent("escape.txt"),
            withDestinationURL: site.parent.appendingPathComponent("secret.txt"))
        try manager.createSymbolicLink(at: site.root.appendingPathComponent("up"), withDestinationURL: site.parent)
        try manager.createSymbolicLink(
            at: site.root.appendingPathComponent("alias.bin"),
            withDestinationURL: site.root.appendingPathComponent("inside/ok.bin"))
        try await withServer(site) { _, port async throws in
            #expect(try await RawHTTP.request(port, "/escape.txt").status == 404)
            #expect(try await RawHTTP.request(port, "/up/secret.txt").status == 404)
            #expect(try await RawHTTP.request(port, "/alias.bin").body == [42])
        }
    }
}
