import Foundation
import ManifestServer
import MapLoader
import MapPublisher
import MapStore
import Testing

/// A real crash in the middle of an update's apply: a site with one package (`planet`,
/// group `base`) at v1 and v2, clients installed at v1, and `update --delta` runs killed
/// with SIGKILL as soon as the client's resume folder shows what `killWhen` looks for.
/// A run that finished first proves nothing, so the next client tries again.
package struct KilledUpdate {
    /// The client whose update was killed, at the state the kill left.
    package let data: URL
    /// The arguments that point a CLI run at the site and `data`.
    package let client: [String]
    /// The server, stopped when the test ends.
    package let server: ManifestServer

    /// Publishes `r1` and `r2` below `dir` (their `data/planet/base` files written by
    /// `write(revision, folder)`) with `segmentLength`, installs v1 on up to four clients,
    /// publishes v2, and kills updates until one dies by the SIGKILL after `killWhen` saw
    /// the resume folder's names (and the folder) as it wanted; `nil` if none did.
    package static func run(
        in dir: TemporaryDirectory, segmentLength: Int64, write: @escaping @Sendable (Int, URL) throws -> Void,
        killWhen: @escaping @Sendable ([String], URL) -> Bool
    ) async throws -> KilledUpdate? {
        let key = try SigningKeyFile.generate(at: dir.path("publisher.key"))
        let tree = ReleaseTree(
            groups: [DataGroup(id: "base", title: "Base", required: true, default: true)],
            root: PackageNode(id: "world", title: "World", children: [PackageNode(id: "planet", title: "Planet")]))
        for revision in 1...2 {
            try FileManager.default.createDirectory(at: dir.path("r\(revision)/data/planet/base"), withIntermediateDirectories: true)
            try JSONCoding.encoder().encode(tree).write(to: dir.path("r\(revision)/tree.json"))
            try await RawThread.run { try write(revision, dir.path("r\(revision)/data/planet/base")) }
        }
        func publish(_ revision: Int) async throws {
            var options = PublishOptions(version: "v\(revision)", level: 3, validity: 3600, keyFile: dir.path("publisher.key"))
            options.segmentLength = segmentLength
            let fixed = options
            try await RawThread.run { try Publisher.publish(release: dir.path("r\(revision)"), site: dir.path("site"), options: fixed) }
        }
        try await publish(1)
        let server = ManifestServer(root: dir.path("site"))
        let url = "http://127.0.0.1:\(try server.start())"
        let client = { (data: URL) in ["--server", url, "--data-dir", data.path, "--trust-key", key.base64] }
        let attempts = 4
        for attempt in 1...attempts {
            let result = try await CLI.run(["install", "planet"] + client(dir.path("data-\(attempt)")))
            #expect(result.status == 0, "\(result.stderr)")
        }
        try await publish(2)
        for attempt in 1...attempts {
            let data = dir.path("data-\(attempt)")
            let resume = DataDirectory(data).resume
            let started = try CLI.start(["update", "--delta"] + client(data))
            let sawIt = try await RawThread.value { () -> Bool in
                while started.0.isRunning {
                    let names = (try? FileManager.default.contentsOfDirectory(atPath: resume.path)) ?? []
                    if killWhen(names, resume) {
                        kill(started.0.processIdentifier, SIGKILL)
                        return true
                    }
                    usleep(200)
                }
                return false
            }
            let first = try await RawThread.value { try CLI.finish(started) }
            // Both must hold: it saw what it waited for, and our SIGKILL ended the process
            // (a death by another signal, or a kill before the state, proves nothing).
            if sawIt && (first.status == SIGKILL + 128 || (started.0.terminationReason == .uncaughtSignal && first.status == SIGKILL)) {
                return KilledUpdate(data: data, client: client(data), server: server)
            }
        }
        server.stop()
        return nil
    }
}
