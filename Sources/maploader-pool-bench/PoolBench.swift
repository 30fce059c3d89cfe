import Foundation
import ManifestServer
import MapLoader
import MapModel
import MapPublisher

/// Measures whether an install keeps Swift's cooperative pool free: a task that sleeps
/// 10 ms in a loop records how late each wake-up is while a large package installs.
/// Prints figures; asserts nothing (run by scripts/bench-pool.sh).
@main
struct PoolBench {
    static func main() async throws {
        let megabytes = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 256
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("maploader-pool-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        let release = work.appendingPathComponent("release")
        // Four packages, so that several groups unpack at once (as they do in an update).
        let leaves = (0..<4).map { "{\"id\":\"big-\($0)\",\"title\":\"Big \($0)\"}" }.joined(separator: ",")
        let tree = """
            {"groups":[{"id":"base","title":"Base","required":true,"default":true}],
             "root":{"id":"world","title":"World","children":[\(leaves)]}}
            """
        try FileManager.default.createDirectory(at: release, withIntermediateDirectories: true)
        try Data(tree.utf8).write(to: release.appendingPathComponent("tree.json"))
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for index in 0..<(megabytes / 8) {
            // 8 MB per file, half random, half runs (compresses like map data, not to nothing).
            var bytes = [UInt8](repeating: 0, count: 8 << 20)
            for offset in stride(from: 0, to: bytes.count, by: 8) where (offset / 4096) % 2 == 0 {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                withUnsafeBytes(of: state) { bytes.replaceSubrange(offset..<offset + 8, with: $0) }
            }
            let files = release.appendingPathComponent("data/big-\(index % 4)/base")
            try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
            try Data(bytes).write(to: files.appendingPathComponent("tile-\(index).bin"))
        }
        try Publisher.publish(
            release: release, site: work.appendingPathComponent("site"),
            options: PublishOptions(version: "v1", level: 1))
        let server = ManifestServer(root: work.appendingPathComponent("site"))
        let port = try server.start()
        defer { server.stop() }
        let loader = MapLoader(
            configuration: .init(
                server: "http://127.0.0.1:\(port)",
                dataDirectory: work.appendingPathComponent("data"),
                trust: TrustPolicy(allowUnsigned: true)))
        let clock = ContinuousClock()
        let running = Task {
            var lateness: [Double] = []
            while !Task.isCancelled {
                let before = clock.now
                try? await Task.sleep(for: .milliseconds(10))
                lateness.append(
                    Double((clock.now - before - .milliseconds(10)).components.attoseconds) / 1e15
                        + Double((clock.now - before - .milliseconds(10)).components.seconds) * 1000)
            }
            return lateness
        }
        let started = clock.now
        let report = try await loader.install(["world"])
        let seconds = clock.now - started
        running.cancel()
        let lateness = await running.value.sorted()
        func percentile(_ p: Double) -> Double { lateness[min(lateness.count - 1, Int(Double(lateness.count) * p))] }
        print(
            String(
                format:
                    "install of %d MB (%d files in 4 packages, %@ downloaded) took %@; a 10 ms sleeper woke %d times, late by p50 %.2f ms, p99 %.2f ms, max %.2f ms",
                megabytes, megabytes / 8, ByteFormat.string(report.downloadedBytes), "\(seconds)", lateness.count,
                percentile(0.5), percentile(0.99), lateness.last ?? 0))
    }
}
