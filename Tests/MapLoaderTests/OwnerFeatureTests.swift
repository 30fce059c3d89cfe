import Foundation
#if canImport(FoundationXML)
    import FoundationXML
#endif
import Synchronization
import Testing
@testable import MapLoader
import ManifestServer

/// What map owners use every day: the cost of an install before paying it, what is on
/// disk, cleaning up, removing everything, and updates run from a timer.
@Suite struct OwnerFeatureTests {
    @Test func planInstallShowsTheCostAndChangesNothing() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        let plan = try await loader.planInstall(["germany"])
        #expect(!FileManager.default.fileExists(atPath: data.appendingPathComponent("current").path))
        let installs = plan.steps.filter { $0.action == .install }
        #expect(Set(installs.map(\.package)) == ["de-berlin", "de-hamburg"])
        #expect(Set(installs.map(\.group)) == ["base", "poi"])
        #expect(installs.allSatisfy { $0.downloadBytes > 0 && $0.writeBytes > 0 })
        #expect(plan.downloadBytes == installs.reduce(0) { $0 + $1.downloadBytes })
        #expect(plan.peakBytes >= plan.downloadBytes)

        let report = try await loader.install(["germany"])
        #expect(report.downloadedBytes == plan.downloadBytes)
        let usage = try await loader.diskUsage()
        // The plan reserves the files' bytes plus a block per file.
        let files = usage.packages.flatMap(\.groups).reduce(0) { $0 + $1.files }
        #expect(installs.reduce(0) { $0 + $1.writeBytes } == usage.installedBytes + 4096 * Int64(files))
        // Planning again after the install: nothing left to do.
        #expect(try await loader.planInstall(["germany"]).changesFiles == false)
    }

    @Test func diskUsageCountsHardLinksOnceAndMatchesDu() async throws {
        let site = try TestSite(revisions: [1, 2])
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        try await loader.install(["europe"])
        let usage = try await loader.diskUsage()
        #expect(usage.packages.map(\.id) == ["ch", "de-berlin", "de-hamburg"])
        let state = try Store(root: data).state()
        for package in usage.packages {
            #expect(package.bytes == state.size(of: package.id))
            for group in package.groups {
                // du -sb counts folders too (4 kB each here): within a block per file.
                let folder = data.appendingPathComponent("current/\(package.id)/\(group.group)")
                let du = try Int64(duApparentBytes(folder))
                #expect(group.bytes <= du && du - group.bytes <= 4096 * Int64(group.files + 8))
            }
        }
        #expect(usage.totalBytes == usage.installedBytes + usage.otherBytes)
        // Another copy of the live version (a reader's pinned version, say) shares every file
        // through hard links: the total grows by the bookkeeping only, not by the maps again.
        let copy = data.appendingPathComponent("generations/999")
        let live = try FileManager.default.destinationOfSymbolicLink(atPath: data.appendingPathComponent("current").path)
        for file in try FileTree.files(in: data.appendingPathComponent(live)) {
            try GenerationBuilder.link(
                data.appendingPathComponent(live).appendingPathComponent(file.path),
                to: copy.appendingPathComponent(file.path))
        }
        let after = try await loader.diskUsage()
        #expect(after.totalBytes == usage.totalBytes)
    }

    @Test func collectGarbageFreesLeftoversAndKeepsTheMaps() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        try await loader.install(["de-berlin"])
        let before = try snapshot(data.appendingPathComponent("current"))
        // Leftovers: an old partial download, a fresh one (maybe another process's fetch in
        // progress), a manifest of a version no longer installed.
        let downloads = data.appendingPathComponent("downloads")
        let old = downloads.appendingPathComponent(String(repeating: "a", count: 64))
        let fresh = downloads.appendingPathComponent(String(repeating: "b", count: 64))
        try Data(count: 300_000).write(to: old)
        try Data(count: 1_000).write(to: fresh)
        let stale = data.appendingPathComponent("cache/manifests/" + String(repeating: "c", count: 64))
        try Data(count: 5_000).write(to: stale)
        let hourAgo = Date().addingTimeInterval(-3600)
        for file in [old, stale] { try FileManager.default.setAttributes([.modificationDate: hourAgo], ofItemAtPath: file.path) }

        let report = try await loader.collectGarbage()
        #expect(report.removed.contains("downloads/" + old.lastPathComponent))
        #expect(report.removed.contains("cache/manifests/" + stale.lastPathComponent))
        #expect(report.freedBytes == 305_000)
        #expect(FileManager.default.fileExists(atPath: fresh.path))
        #expect(try snapshot(data.appendingPathComponent("current")) == before)
        #expect(try await loader.verify().ok)
        // Nothing left to free.
        #expect(try await loader.collectGarbage().freedBytes == 0)
    }

    @Test func uninstallAllRemovesEveryPackageAndFreesTheFiles() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        try await loader.install(["europe"])
        let report = try await loader.uninstallAll()
        #expect(report.committed)
        #expect(Set(report.steps.map(\.package)) == ["ch", "de-berlin", "de-hamburg"])
        #expect(try Store(root: data).state().packages.isEmpty)
        #expect(try await loader.diskUsage().installedBytes == 0)
        // Only the one (empty) live generation is left on disk.
        let generations = try FileManager.default.contentsOfDirectory(atPath: data.appendingPathComponent("generations").path)
        #expect(generations.count == 1)
        #expect(
            try FileTree.files(in: data.appendingPathComponent("generations/\(generations[0])")).allSatisfy {
                !$0.path.hasPrefix("ch/") && !$0.path.hasPrefix("de-")
            })
        #expect(try await loader.uninstallAll().committed == false)
    }

    @Test func timerUpdatesAreSilentUnlessSomethingChanged() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        #expect(try await CLI.run(["install", "de-berlin"], site: site, data: data).status == 0)
        let idle = try await CLI.run(["update", "--if-available", "--quiet"], site: site, data: data)
        #expect(idle.status == 0)
        #expect(idle.stdout.isEmpty)
        #expect(idle.stderr.isEmpty)

        try site.publish(2)
        let updated = try await CLI.run(["update", "--if-available", "--quiet"], site: site, data: data)
        #expect(updated.status == 0)
        let lines = updated.stdout.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(lines.first?.hasPrefix("updated de-berlin at version v2") == true)
        #expect(updated.stderr.isEmpty)
        #expect(try await CLI.run(["update", "--if-available", "--quiet"], site: site, data: data).stdout.isEmpty)
    }

    @Test func ownerCommandsThroughTheCLI() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let dry = try await CLI.run(["install", "--dry-run", "germany"], site: site, data: data)
        #expect(dry.status == 0)
        #expect(dry.stdout.contains("ON DISK") && dry.stdout.contains("de-hamburg/poi"))
        #expect(!FileManager.default.fileExists(atPath: data.appendingPathComponent("current").path))
        let dryJSON = try await CLI.run(["install", "--dry-run", "--json", "germany"], site: site, data: data)
        let plan = try JSONSerialization.jsonObject(with: Data(dryJSON.stdout.utf8)) as? [String: Any]
        #expect((plan?["downloadBytes"] as? Int ?? 0) > 0)

        #expect(try await CLI.run(["install", "germany"], site: site, data: data).status == 0)
        let du = try await CLI.run(["du", "--json"], site: site, data: data)
        let usage = try JSONSerialization.jsonObject(with: Data(du.stdout.utf8)) as? [String: Any]
        #expect((usage?["packages"] as? [[String: Any]])?.count == 2)
        #expect(try await CLI.run(["du"], site: site, data: data).stdout.contains("de-hamburg"))
        #expect(try await CLI.run(["gc"], site: site, data: data).stdout.hasPrefix("freed "))

        let both = try await CLI.run(["uninstall", "--all", "de-berlin"], site: site, data: data)
        #expect(both.status == 64)
        let all = try await CLI.run(["uninstall", "--all"], site: site, data: data)
        #expect(all.status == 0)
        #expect(all.stdout.hasPrefix("uninstalled de-berlin, de-hamburg"))
        #expect(try await CLI.run(["du"], site: site, data: data).stdout.hasPrefix("nothing installed"))
    }
}

/// A quota on the data directory: refused up front, nothing changed, the error says what to do.
@Suite struct QuotaTests {
    @Test func aChangePastTheQuotaIsRefusedUpFront() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        try await loader.install(["de-berlin"])
        let installed = try Store(root: data).state().size(of: "de-berlin")
        let plan = try await loader.planInstall(["de-hamburg"])
        // A quota one byte short of the install's peak.
        let limited = MapLoader(
            configuration: .init(
                server: site.url, dataDirectory: data, trust: TrustPolicy(keys: [site.publicKey]),
                quota: installed + plan.peakBytes - 1))
        do {
            try await limited.install(["de-hamburg"])
            Issue.record("an install past the quota was carried out")
        } catch {
            guard case .quotaExceeded(let quota, let needed, let largest) = error else { Issue.record("\(error)"); return }
            #expect(quota == installed + plan.peakBytes - 1 && needed == installed + plan.peakBytes)
            #expect(largest.first?.hasPrefix("de-berlin ") == true)
            #expect(error.description.contains("uninstall one of the largest packages (de-berlin"))
        }
        #expect(try Store(root: data).state().packages.keys.sorted() == ["de-berlin"])
        // Exactly at the quota is allowed.
        let enough = MapLoader(
            configuration: .init(
                server: site.url, dataDirectory: data, trust: TrustPolicy(keys: [site.publicKey]),
                quota: installed + plan.peakBytes))
        try await enough.install(["de-hamburg"])
    }

    @Test func aSavedQuotaHoldsForEveryLoaderOfTheDirectory() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        try await site.loader(dataDirectory: data).setQuota(10_000)
        let other = site.loader(dataDirectory: data)
        #expect(try await other.quota() == 10_000)
        await #expect(throws: MapLoaderError.self) { try await other.install(["ch"]) }
        #expect(try Store(root: data).state().packages.isEmpty)
        try await other.setQuota(nil)
        try await other.install(["ch"])
        await #expect(throws: MapLoaderError.invalidParameters("a quota must be more than 0 bytes")) { try await other.setQuota(0) }
    }

    @Test func quotaThroughTheCLI() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        #expect(try await CLI.run(["config", "set", "quota", "50kB"], site: site, data: data).stdout == "quota 50.0 kB\n")
        #expect(try await CLI.run(["config", "get"], site: site, data: data).stdout == "quota 50.0 kB\n")
        let refused = try await CLI.run(["install", "europe"], site: site, data: data)
        #expect(refused.status == 8)
        #expect(refused.stderr.contains("over the data directory's quota of 50.0 kB"))
        #expect(try await CLI.run(["config", "set", "quota", "lots"], site: site, data: data).status == 64)
        #expect(try await CLI.run(["config", "unset", "quota"], site: site, data: data).stdout == "quota none\n")
        #expect(try await CLI.run(["install", "europe"], site: site, data: data).status == 0)
    }

    @Test func sizesParseAsPeopleWriteThem() {
        #expect(ByteFormat.parse("2GB") == 2_000_000_000)
        #expect(ByteFormat.parse("500 MB") == 500_000_000)
        #expect(ByteFormat.parse("1.5G") == 1_500_000_000)
        #expect(ByteFormat.parse("750k") == 750_000)
        #expect(ByteFormat.parse("1GiB") == 1 << 30)
        #expect(ByteFormat.parse("4096") == 4096)
        #expect(ByteFormat.parse("lots") == nil && ByteFormat.parse("-1GB") == nil && ByteFormat.parse("5 parsecs") == nil)
    }
}

/// Tags and coverage maps: what owners attach to their maps and how they see them.
@Suite struct TagAndCoverageTests {
    @Test func tagsAreKeptAcrossUpdatesAndRemovedWithThePackage() async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["de-berlin", "ch"])
        await #expect(throws: MapLoaderError.notInstalled("de-hamburg")) { try await loader.setTags(["a": "b"], on: "de-hamburg") }
        await #expect(throws: MapLoaderError.self) { try await loader.setTags(["a=b": "c"], on: "de-berlin") }
        #expect(
            try await loader.setTags(["trip": "2026-summer", "owner": "fleet-7"], on: "de-berlin") == ["trip": "2026-summer", "owner": "fleet-7"])
        #expect(try await loader.setTags(["owner": nil], on: "de-berlin") == ["trip": "2026-summer"])
        try site.publish(2)
        #expect(try await loader.performUpdate().committed)
        #expect(try await loader.tags(of: "de-berlin") == ["trip": "2026-summer"])
        #expect(try await loader.package("de-berlin").tags == ["trip": "2026-summer"])
        #expect(try await loader.package("ch").tags == [:])
        try await loader.uninstall(["de-berlin"])
        try await loader.install(["de-berlin"])
        #expect(try await loader.tags(of: "de-berlin") == [:])
    }

    @Test func coverageGeoJSONFollowsRFC7946() async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["de-berlin"])
        let coverage = try await loader.coverage()
        #expect(coverage.areas.map(\.package.id) == ["de-berlin", "de-hamburg", "ch"])
        let json = try #require(try JSONSerialization.jsonObject(with: coverage.geoJSON()) as? [String: Any])
        #expect(json["type"] as? String == "FeatureCollection")
        let features = try #require(json["features"] as? [[String: Any]])
        #expect(features.count == 3)
        for feature in features {
            #expect(feature["type"] as? String == "Feature")
            let geometry = try #require(feature["geometry"] as? [String: Any])
            let rings = try #require((geometry["coordinates"] as? [[[Double]]]))
            #expect(geometry["type"] as? String == "Polygon")
            for (index, ring) in rings.enumerated() {
                #expect(ring.count >= 4 && ring.first == ring.last)  // closed
                #expect((Coverage.signedArea(ring) > 0) == (index == 0))  // outer CCW, holes CW
            }
            let properties = try #require(feature["properties"] as? [String: Any])
            let expected = properties["id"] as? String == "de-berlin" ? "installed" : "notInstalled"
            #expect(properties["state"] as? String == expected)
        }
        let berlin = try #require(features.first { ($0["properties"] as? [String: Any])?["id"] as? String == "de-berlin" })
        let properties = try #require(berlin["properties"] as? [String: Any])
        #expect(properties["version"] as? String == "v1")
        #expect(properties["groups"] as? [String] == ["base", "poi"])
        #expect((properties["metadata"] as? [String: Any])?["iso"] as? String == "DE-BE")
        #expect(try await loader.coverage(installedOnly: true).areas.map(\.package.id) == ["de-berlin"])
    }

    @Test func ringsAreClosedAndWoundWhateverThePublisherWrote() {
        // Clockwise and open, as a publisher may write it.
        let clockwise: [[Double]] = [[0, 0], [0, 1], [1, 1], [1, 0]]
        let outer = Coverage.normalized(clockwise, counterclockwise: true)
        #expect(outer.first == outer.last && outer.count == 5)
        #expect(Coverage.signedArea(outer) > 0)
        let hole = Coverage.normalized(outer, counterclockwise: false)
        #expect(Coverage.signedArea(hole) < 0)
    }

    @Test func coverageSVGIsWellFormedWithOneShapePerPackage() async throws {
        let site = try TestSite()
        let loader = site.loader()
        try await loader.install(["ch"])
        let coverage = try await loader.coverage()
        let svg = coverage.svg(width: 800)
        let counter = ShapeCounter()
        let parser = XMLParser(data: Data(svg.utf8))
        parser.delegate = counter
        #expect(parser.parse(), "the SVG is not well-formed XML: \(parser.parserError.map(String.init(describing:)) ?? "")")
        #expect(counter.root == "svg")
        #expect(counter.packages == coverage.areas.map(\.package.id))
        #expect(counter.states["ch"] == "installed" && counter.states["de-berlin"] == "notInstalled")
        #expect(Set(counter.legend) == ["installed", "partly installed", "update available", "damaged: run repair", "not installed"])
    }

    @Test func tagAndCoverageThroughTheCLI() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        #expect(try await CLI.run(["install", "de-berlin"], site: site, data: data).status == 0)
        #expect(try await CLI.run(["tag", "de-berlin", "trip=2026-summer", "owner=fleet-7"], site: site, data: data).status == 0)
        #expect(try await CLI.run(["tag", "de-berlin", "--remove", "owner"], site: site, data: data).stdout == "trip=2026-summer\n")
        #expect(try await CLI.run(["info", "de-berlin"], site: site, data: data).stdout.contains("trip=2026-summer"))
        #expect(try await CLI.run(["tag", "de-berlin", "oops"], site: site, data: data).status == 64)
        #expect(try await CLI.run(["tag", "ch", "a=b"], site: site, data: data).status != 0)
        let geojson = site.dir.path("c.geojson"), svg = site.dir.path("c.svg")
        let written = try await CLI.run(["coverage", "--geojson", geojson.path, "--svg", svg.path], site: site, data: data)
        #expect(written.status == 0)
        #expect(written.stderr.contains("wrote 3 package area(s)"))
        let parsed = try JSONSerialization.jsonObject(with: Data(contentsOf: geojson)) as? [String: Any]
        #expect((parsed?["features"] as? [Any])?.count == 3)
        #expect(try String(contentsOf: svg, encoding: .utf8).contains("data-id=\"de-berlin\""))
        let piped = try await CLI.run(["coverage", "--installed", "--geojson", "-"], site: site, data: data)
        #expect(((try JSONSerialization.jsonObject(with: Data(piped.stdout.utf8)) as? [String: Any])?["features"] as? [Any])?.count == 1)
        #expect(try await CLI.run(["coverage"], site: site, data: data).status == 64)
    }
}

/// Counts the package shapes and legend entries of an SVG.
private final class ShapeCounter: NSObject, XMLParserDelegate {
    var root: String?
    var packages: [String] = []
    var states: [String: String] = [:]
    var legend: [String] = []
    private var inText = false

    func parser(
        _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        if root == nil { root = name }
        if name == "path", attributes["class"] == "package", let id = attributes["data-id"] {
            packages.append(id)
            states[id] = attributes["data-state"]
        }
        inText = name == "text"
        if inText { legend.append("") }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if inText { legend[legend.count - 1] += string }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        inText = false
    }
}

/// `du -sb` of a folder: its apparent size in bytes, folders included.
private func duApparentBytes(_ folder: URL) throws -> Int {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/du")
    process.arguments = ["-sb", folder.path]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Int(String(decoding: output, as: UTF8.self).split(separator: "\t")[0]) ?? -1
}

/// A bandwidth cap for background use (`--limit-rate`, `Configuration.maximumRate`).
@Suite struct RateLimitTests {
    @Test func aCappedDownloadComesInWindowsOfAQuarterSecond() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let plan = try await site.loader().planInstall(["de-berlin"])
        let capped = MapLoader(
            configuration: .init(
                server: site.url, dataDirectory: data,
                trust: TrustPolicy(keys: [site.publicKey]), maximumRate: 40_000))
        site.server.resetStatistics()
        try await capped.install(["de-berlin"])
        #expect(try await capped.verify().ok)
        let statistics = site.server.statistics
        // Every blob came as 206 windows of at most 16 kB (a quarter second of 40 kB/s, at
        // least 16 kB): more requests than blobs, and never a whole large blob at once.
        let blobs = plan.steps.filter { $0.action == .install }
        let windows = blobs.reduce(0) { $0 + Int(($1.downloadBytes + 16_383) / 16_384) }
        // (the pinned manifest comes the same way, hence "at least").
        #expect(statistics.statusCounts[206, default: 0] >= windows, "\(statistics.bodyBytesSentByPath)")
        #expect(statistics.statusCounts[200, default: 0] <= 2)  // catalog.json and its signature only
        #expect(windows > blobs.count)
        #expect(statistics.bodyBytesSent >= plan.downloadBytes)
    }

    @Test func theBucketPacesBytesToTheRate() {
        // The bucket's own arithmetic, on instants the test chooses (no clock read).
        let start = ContinuousClock.now
        let limiter = RateLimiter(bytesPerSecond: 1_000, start: start)
        #expect(limiter.take(1_000, now: start) == .zero)  // one second of burst
        #expect(limiter.take(500, now: start) == .milliseconds(501))  // half a second's worth waits half a second
        #expect(limiter.take(250, now: start + .seconds(1)) == .zero)  // a second later 1,000 B came back: 500 owed, 250 taken
        #expect(limiter.take(10_000, now: start + .seconds(100)) == .milliseconds(9_001))  // the burst is capped at one second
    }

    @Test func limitRateThroughTheCLI() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        #expect(try await CLI.run(["install", "de-berlin", "--limit-rate", "lots"], site: site, data: data).status == 64)
        site.server.resetStatistics()
        #expect(try await CLI.run(["install", "de-berlin", "--limit-rate", "40k"], site: site, data: data).status == 0)
        #expect(site.server.statistics.statusCounts[206, default: 0] > 2)
    }
}

/// Handles per operation: pause keeps the partial file, resume continues with Range.
@Suite struct OperationHandleTests {
    @Test func pauseKeepsThePartialFileAndResumeContinuesWithRange() async throws {
        // A slow server, so the download is surely in the middle when paused.
        let site = try TestSite(faults: FaultPlan(bytesPerSecond: 8_000))
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        let blob = try #require(try site.manifest("v1").root.allNodes.first { $0.id == "de-berlin" }?.artifacts?["base"])
        let partial = data.appendingPathComponent("downloads/\(blob.sha256)")
        // The pause comes from the progress callback itself, a third of the way in, so it
        // lands mid-download however busy the machine is.
        let pauser = PauseAtBytes(blob.size / 3)
        await loader.setDelegate(pauser)
        let handle = loader.start { try await $0.install(["de-berlin"]) }
        pauser.handle.withLock { $0 = handle }
        try await RawThread.run { try waitUntil { handle.isPaused } }
        try await RawThread.run { try waitUntil { handle.requestsInFlight == 0 } }
        let kept = try #require(FileStatus.of(partial.path)?.size)
        #expect(kept > 0 && kept < blob.size)
        let sentBeforeResume = site.server.statistics.bodyBytesSentByPath["/" + SiteLayout.blob(blob.sha256)] ?? 0
        // Paused: nothing more arrives while time passes (the rest of this blob takes the
        // server a few milliseconds, so a transfer that kept going would have grown it).
        // The server may still finish writing what it had in flight; the file is what counts.
        try await Task.sleep(for: .milliseconds(400))
        #expect(FileStatus.of(partial.path)?.size == kept)
        handle.resume()
        let report = try await handle.value
        #expect(report.committed)
        #expect(try await loader.verify().ok)
        let statistics = site.server.statistics
        // The rest came with Range (206) from where the kept file ended: the server sent the
        // blob once, plus at most what was on the wire when the pause cut the request (a
        // restart from zero would have sent the kept part again).
        #expect(statistics.statusCounts[206, default: 0] >= 1)
        let sent = try #require(statistics.bodyBytesSentByPath["/" + SiteLayout.blob(blob.sha256)])
        #expect(sent >= blob.size && sent < blob.size + kept)
        #expect(sentBeforeResume >= kept)
    }

    @Test func cancellingAHandleChangesNothing() async throws {
        let site = try TestSite(faults: FaultPlan(bytesPerSecond: 8_000))
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        let handle = loader.start { try await $0.install(["de-berlin"]) }
        handle.pause()  // paused before it even started: it waits
        try await RawThread.run { try waitUntil { FileManager.default.fileExists(atPath: data.appendingPathComponent("locks").path) } }
        handle.cancel()
        await #expect(throws: MapLoaderError.cancelled) { try await handle.value }
        #expect(try Store(root: data).state().packages.isEmpty)
        // The loader goes on with the next operation.
        try await loader.install(["ch"])
    }
}

/// A delegate that pauses an operation once its downloads pass `threshold` bytes.
final class PauseAtBytes: MapLoaderDelegate, Sendable {
    let threshold: Int64
    let handle = Mutex<OperationHandle<UpdateReport>?>(nil)
    private let fired = Mutex(false)

    init(_ threshold: Int64) { self.threshold = threshold }

    func mapLoader(_ loader: MapLoader, didUpdateProgress progress: OperationProgress) {
        guard progress.phase == .download, progress.completedBytes >= threshold else { return }
        handle.withLock { handle in
            guard let handle else { return }
            fired.withLock { fired in
                if !fired { handle.pause() }
                fired = true
            }
        }
    }
}

/// Waits (on a thread of its own) until `condition` holds; fails after 300 s as a guard
/// against a hang, never as a measure of speed.
func waitUntil(_ condition: () -> Bool) throws {
    let deadline = Date().addingTimeInterval(300)
    while !condition() {
        guard Date() < deadline else { throw CancellationError() }
        usleep(5_000)
    }
}

/// Uninstalling frees the bytes on disk at once, measured with `statfs` on a file system
/// of the test's own (a small tmpfs, which needs root; skipped where mounting is refused).
@Suite struct FreedSpaceTests {
    static let canMount: Bool = {
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent("maploader-mount-probe-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: probe) }
        guard (try? FileManager.default.createDirectory(at: probe, withIntermediateDirectories: true)) != nil,
            run("/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", probe.path]) == 0
        else { return false }
        _ = run("/bin/umount", [probe.path])
        return true
    }()

    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    @Test(.enabled(if: canMount, "mounting a tmpfs needs root"))
    func uninstallFreesTheBytesOnDisk() async throws {
        let site = try TestSite()
        let mountPoint = site.dir.path("tmpfs")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        #expect(Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=64m", "tmpfs", mountPoint.path]) == 0)
        defer { Self.run("/bin/umount", [mountPoint.path]) }
        let data = mountPoint.appendingPathComponent("maps")
        let loader = site.loader(dataDirectory: data)
        try await loader.install(["europe"])
        let installed = try await loader.diskUsage().installedBytes
        let before = try #require(FileSystem.availableSpace(at: mountPoint.path))
        try await loader.uninstallAll()
        let after = try #require(FileSystem.availableSpace(at: mountPoint.path))
        // Every installed byte is free again (tmpfs gives back whole pages, so at least that).
        #expect(after - before >= installed, "freed \(after - before) of \(installed) installed bytes")
        #expect(try await loader.diskUsage().installedBytes == 0)
    }
}
