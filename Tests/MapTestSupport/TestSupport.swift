import Foundation
import MapLoader
import MapPublisher

/// A temporary folder removed when the value is released.
package final class TemporaryDirectory: Sendable {
    package let url: URL

    package init(_ name: String = "maploader-test") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    package func path(_ relative: String) -> URL { url.appendingPathComponent(relative) }
}

/// Builds release folders for tests: a small tree with a few leaves and groups.
package struct ReleaseBuilder {
    package let root: URL

    package init(root: URL) { self.root = root }

    package static let groups: [DataGroup] = [
        DataGroup(id: "base", title: "Base map", required: true, default: true),
        DataGroup(id: "poi", title: "Points of interest", required: false, default: true),
        DataGroup(id: "transit", title: "Transit", required: false, default: false),
    ]

    package static let tree = ReleaseTree(
        groups: groups,
        root: PackageNode(
            id: "world", title: "World",
            children: [
                PackageNode(
                    id: "europe", title: "Europe",
                    children: [
                        PackageNode(
                            id: "germany", title: "Germany",
                            children: [
                                PackageNode(
                                    id: "de-berlin", title: "Berlin",
                                    bbox: BoundingBox(minLon: 13.08, minLat: 52.33, maxLon: 13.76, maxLat: 52.68),
                                    metadata: [
                                        "iso": .string("DE-BE"), "population": .number(3_755_251), "capital": .bool(true),
                                        "names": .object(["de": .string("Berlin"), "pl": .string("Berlin"), "ru": .string("Берлин")]),
                                    ]),
                                PackageNode(
                                    id: "de-hamburg", title: "Hamburg",
                                    bbox: BoundingBox(minLon: 9.73, minLat: 53.39, maxLon: 10.33, maxLat: 53.74)),
                            ]),
                        PackageNode(
                            id: "ch", title: "Switzerland",
                            bbox: BoundingBox(minLon: 5.96, minLat: 45.82, maxLon: 10.49, maxLat: 47.81)),
                    ])
            ]))

    /// Writes `tree.json` and data for every leaf: `base` with a few files, `poi` and `transit`.
    /// `revision` changes some bytes of de-berlin so versions differ.
    @discardableResult
    package static func make(at root: URL, revision: Int = 1, tree: ReleaseTree = ReleaseBuilder.tree) throws -> ReleaseBuilder {
        let builder = ReleaseBuilder(root: root)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try JSONCoding.encoder().encode(tree).write(to: root.appendingPathComponent("tree.json"))
        for leaf in tree.root.leaves {
            var rng = SeededGenerator(seed: UInt64(leaf.id.utf8.reduce(7) { $0 &* 31 &+ Int($1) }))
            let big = (0..<40_000).map { _ in UInt8.random(in: 0...40, using: &rng) }
            var edited = big
            if leaf.id == "de-berlin" { for i in 0..<revision * 10 { edited[i * 97 % edited.count] ^= 0x55 } }
            try builder.write(Data(edited), "\(leaf.id)/base/roads.bin")
            try builder.write(
                Data("{\"name\":\"\(leaf.title)\",\"rev\":\(leaf.id == "de-berlin" ? revision : 1)}".utf8),
                "\(leaf.id)/base/meta.json")
            for tile in 0..<5 { try builder.write(Data(repeating: UInt8(tile), count: 900 + tile), "\(leaf.id)/base/tiles/\(tile)/0.mvt") }
            // de-hamburg's POIs grow by a row per revision, so two packages change together.
            let rows = leaf.id == "de-hamburg" ? (1...(revision * 400)).map { "\($0 + 1),Fischmarkt \($0 * 7919 % 1000)\n" }.joined() : ""
            try builder.write(Data("id,name\n1,\(leaf.title) Cafe\n\(rows)".utf8), "\(leaf.id)/poi/poi.csv")
            if leaf.id != "ch" { try builder.write(Data("stop_id,stop_name\n1,Hbf\n".utf8), "\(leaf.id)/transit/stops.txt") }
        }
        return builder
    }

    package func write(_ data: Data, _ relative: String) throws {
        let file = root.appendingPathComponent("data").appendingPathComponent(relative)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: file)
    }
}

/// A deterministic PRNG (SplitMix64) so test data is the same on every run.
package struct SeededGenerator: RandomNumberGenerator {
    package var state: UInt64
    package init(seed: UInt64) { state = seed }
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Every file below a folder with its SHA-256: compares trees byte for byte.
package func snapshot(_ folder: URL) throws -> [String: String] {
    guard FileManager.default.fileExists(atPath: folder.path) else { return [:] }
    var result: [String: String] = [:]
    for entry in try FileTree.entries(in: folder.resolvingSymlinksInPath()) { result[entry.path] = entry.sha256 }
    return result
}

/// Collects a loader's events for assertions.
package actor EventLog {
    package init() {}
    package private(set) var events: [MapLoaderEvent] = []
    package func append(_ event: MapLoaderEvent) { events.append(event) }

    package func steps() -> [GroupStep] {
        events.compactMap { if case .planned(let step) = $0 { return step } else { return nil } }
    }
}

/// A loopback port nothing listens on: bound and never listened on, and kept bound for
/// the life of the test process, so a connection is refused and no server started by a
/// test running beside it can take the port.
package func closedPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

extension PatchOptions {
    /// Options that try every encoding (no estimate skips one), so a test can compare them.
    package static func comparingEvery(
        level: Int, segmentLength: Int64? = nil, wholeFileSuffix: Bool = false, wholeExpansionFrame: Bool = false,
        wholeCrossFrame: Bool = false
    ) -> PatchOptions {
        var options = PatchOptions(level: level, segmentLength: segmentLength)
        options.skipByEstimate = false
        options.wholeFileSuffix = wholeFileSuffix
        options.wholeExpansionFrame = wholeExpansionFrame
        options.wholeCrossFrame = wholeCrossFrame
        return options
    }

    /// Options that keep every file above twice `segmentLength` segmented (no whole-file
    /// suffix-array trial), for tests of the segments themselves.
    package static func segmentsOnly(level: Int, segmentLength: Int64) -> PatchOptions {
        var options = PatchOptions(level: level, segmentLength: segmentLength)
        (options.wholeFileSuffix, options.wholeRawFileSuffix, options.wholeExpansionFrame) = (false, false, false)
        options.wholeCrossFrame = false
        return options
    }
}

extension PatchBuilder {
    /// The patch from `old` to `new` at `level` built twice on a raw thread: as a publisher
    /// does (into `dir/quick`) and trying every encoding (``PatchOptions/comparingEvery(level:segmentLength:)``,
    /// into `dir/full`), so a test can check what the estimates skipped and that the bytes
    /// are the same.
    package static func buildWithAndWithoutEstimates(
        from old: URL, to new: URL, in dir: TemporaryDirectory, level: Int = 19
    ) async throws -> (quick: PatchStats, full: PatchStats) {
        try await RawThread.value {
            (
                try build(from: old, to: new, output: dir.path("quick"), options: PatchOptions(level: level)),
                try build(from: old, to: new, output: dir.path("full"), options: .comparingEvery(level: level))
            )
        }
    }
}
