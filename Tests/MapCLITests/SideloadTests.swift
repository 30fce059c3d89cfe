import Foundation
import ManifestServer
import MapPlatform
import MapTestSupport
import Synchronization
import Testing

@testable import MapLoader

/// A site on a USB stick or inside an app bundle: `--server` names a folder (or a
/// `file://` URL) and installs and updates work exactly as over HTTP, with the same
/// signature and hash checks.
@Suite struct SideloadTests {
    @Test(arguments: ["folder", "file URL"])
    func aFolderSiteInstallsAndUpdatesLikeHTTP(form: String) async throws {
        let site = try TestSite()
        let server = form == "folder" ? site.site.path : site.site.absoluteURL.absoluteString
        #expect(server.hasPrefix(form == "folder" ? "/" : "file:///"))
        let data = site.dir.path("data")
        let loader = MapLoader(configuration: .init(server: server, dataDirectory: data, trust: TrustPolicy(keys: [site.publicKey])))
        try await loader.install(["de-berlin"])
        let viaHTTP = site.loader()
        try await viaHTTP.install(["de-berlin"])
        #expect(
            try snapshot(data.appendingPathComponent("current/de-berlin"))
                == snapshot(URL(fileURLWithPath: viaHTTP.configuration.dataDirectory.path).appendingPathComponent("current/de-berlin")))

        try site.publish(2)
        let report = try await loader.performUpdate()
        #expect(report.toVersion == "v2")
        #expect(report.steps.contains { $0.method == .delta && $0.package == "de-berlin" })
        #expect(try await loader.verify().ok)
    }

    @Test func aTamperedFolderSiteIsRefusedAndChangesNothing() async throws {
        let site = try TestSite()
        let stick = site.dir.path("usb")
        try FileManager.default.copyItem(at: site.site, to: stick)
        let data = site.dir.path("data")
        let loader = MapLoader(configuration: .init(server: stick.path, dataDirectory: data, trust: TrustPolicy(keys: [site.publicKey])))
        // One byte of one archive changed on the stick: the pinned hash refuses it.
        let manifest = try site.manifest("v1")
        let blob = try #require(manifest.root.allNodes.first { $0.id == "de-berlin" }?.artifacts?["base"]?.sha256)
        let file = stick.appendingPathComponent(SiteLayout.blob(blob))
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: file)
        await #expect(throws: MapLoaderError.self) { try await loader.install(["de-berlin"]) }
        #expect(try Store(root: data).state().packages.isEmpty)
        // A catalog edited on the stick matches neither its timestamp nor its signature (a
        // new device reads it; one that kept the catalog the timestamp pins has no need to).
        let catalog = stick.appendingPathComponent("catalog.json")
        let text = try String(contentsOf: catalog, encoding: .utf8).replacingOccurrences(of: "\"v1\"", with: "\"v1 \"")
        try text.write(to: catalog, atomically: true, encoding: .utf8)
        let fresh = site.dir.path("fresh")
        do {
            try await MapLoader(configuration: .init(server: stick.path, dataDirectory: fresh, trust: TrustPolicy(keys: [site.publicKey])))
                .install(["ch"])
            Issue.record("a tampered catalog was accepted")
        } catch {
            guard case .signatureRefused = error else {
                Issue.record("expected signatureRefused, got \(error)")
                return
            }
        }
        #expect(try Store(root: fresh).state().packages.isEmpty)
    }

    @Test func mapsFromAStickLaterUpdateFromTheServer() async throws {
        let site = try TestSite()
        let stick = site.dir.path("usb")
        try FileManager.default.copyItem(at: site.site, to: stick)
        let data = site.dir.path("data")
        let offline = MapLoader(configuration: .init(server: stick.path, dataDirectory: data, trust: TrustPolicy(keys: [site.publicKey])))
        try await offline.install(["de-berlin"])
        try site.publish(2)
        // Back online: the same data directory, now pointed at the HTTP server.
        let online = site.loader(dataDirectory: data)
        let report = try await online.performUpdate()
        #expect(report.fromVersion == "v1" && report.toVersion == "v2")
        #expect(report.steps.contains { $0.method == .delta })
        #expect(try await online.verify().ok)
    }
}

/// `export`: one device hands its maps to another without a network.
@Suite struct ExportTests {
    @Test func anExportedSiteInstallsOfflineAndLaterUpdatesFromTheServer() async throws {
        let site = try TestSite()
        let giver = site.loader()
        try await giver.install(["germany", "ch"])
        let usb = site.dir.path("usb")
        let report = try await giver.export(["germany"], to: usb)
        #expect(report.packages == ["de-berlin", "de-hamburg"] && report.version == "v1" && report.groups == 4)
        // Only what those packages need: no archives, no other package.
        #expect(!FileManager.default.fileExists(atPath: usb.appendingPathComponent("blobs").path))
        let trees = try FileManager.default.contentsOfDirectory(atPath: usb.appendingPathComponent("trees").path)
        #expect(trees.count == 4)
        #expect(
            try Data(contentsOf: usb.appendingPathComponent("catalog.json")) == Data(contentsOf: site.site.appendingPathComponent("catalog.json")))
        // The manifest travels as the device keeps it, the JSON the catalog pins.
        #expect(try Data(contentsOf: usb.appendingPathComponent(SiteLayout.manifest("v1"))).first == UInt8(ascii: "{"))

        let data = site.dir.path("receiver")
        let receiver = MapLoader(configuration: .init(server: usb.path, dataDirectory: data, trust: TrustPolicy(keys: [site.publicKey])))
        let installed = try await receiver.install(["de-berlin"])
        #expect(installed.downloadedBytes == 0)
        #expect(try await receiver.verify().ok)
        #expect(
            try snapshot(data.appendingPathComponent("current/de-berlin"))
                == snapshot(giver.configuration.dataDirectory.appendingPathComponent("current/de-berlin")))
        await #expect(throws: MapLoaderError.self) { try await receiver.install(["ch"]) }  // not exported

        try site.publish(2)
        let online = site.loader(dataDirectory: data)
        let update = try await online.performUpdate()
        #expect(update.toVersion == "v2")
        #expect(update.steps.contains { $0.method == .delta })
        #expect(try await online.verify().ok)
    }

    @Test func aTamperedExportIsRefused() async throws {
        let site = try TestSite()
        let giver = site.loader()
        try await giver.install(["de-berlin"])
        let usb = site.dir.path("usb")
        try await giver.export(["de-berlin"], to: usb)
        let trees = usb.appendingPathComponent("trees")
        let tree = try #require(try FileManager.default.contentsOfDirectory(atPath: trees.path).first)
        let file = try #require(try FileTree.files(in: trees.appendingPathComponent(tree)).first)
        try Data("changed".utf8).write(to: trees.appendingPathComponent(tree).appendingPathComponent(file.path))
        let data = site.dir.path("receiver")
        let receiver = MapLoader(configuration: .init(server: usb.path, dataDirectory: data, trust: TrustPolicy(keys: [site.publicKey])))
        do {
            try await receiver.install(["de-berlin"])
            Issue.record("a tampered export was installed")
        } catch {
            guard case .integrityFailed = error else {
                Issue.record("\(error)")
                return
            }
        }
        #expect(try Store(root: data).state().packages.isEmpty)
    }

    /// A folder site whose `catalog.json` is a FIFO (a stick can hold anything): the read
    /// fails at once with a line saying so, instead of blocking in `open(2)` for ever.
    @Test func aFIFOInAFolderSiteFailsInsteadOfHanging() async throws {
        let dir = TemporaryDirectory()
        let folder = dir.path("stick")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let mkfifo = try Process.run(URL(fileURLWithPath: "/usr/bin/mkfifo"), arguments: [folder.appendingPathComponent("catalog.json").path])
        mkfifo.waitUntilExit()
        #expect(FileStatus.of(folder.appendingPathComponent("catalog.json").path)?.kind == .other)
        let loader = MapLoader(configuration: .init(server: folder.path, dataDirectory: dir.path("data"), trust: TrustPolicy(allowUnsigned: true)))
        let outcome = try await withThrowingTaskGroup(of: String.self) { group in
            group.addTask {
                do {
                    _ = try await loader.packageTree()
                    return "read a tree"
                } catch {
                    return "\(error)"
                }
            }
            group.addTask {
                try await Task.sleep(for: .seconds(120))
                return "still blocked after two minutes"
            }
            defer { group.cancelAll() }
            return try await group.next() ?? ""
        }
        #expect(outcome.contains("something other than a file"), "\(outcome)")
    }

    /// An export that fails half-way (installed files changed on the device) leaves its
    /// folder as empty as it found it, so the same export goes into it after a repair.
    @Test func aFailedExportLeavesItsFolderEmptyForTheRetry() async throws {
        let site = try TestSite()
        let giver = site.loader()
        try await giver.install(["de-berlin"])
        let installed = try #require(try FileTree.files(in: giver.currentFolder.appendingPathComponent("de-berlin")).first)
        try Data("changed".utf8).write(to: giver.currentFolder.appendingPathComponent("de-berlin").appendingPathComponent(installed.path))
        let usb = site.dir.path("usb")
        do {
            try await giver.export(["de-berlin"], to: usb)
            Issue.record("maps changed on the device were exported")
        } catch {
            #expect(error.description.contains("repair, then export"), "\(error)")
        }
        #expect(FileSystem.names(in: usb.path).isEmpty, "left behind: \(FileSystem.names(in: usb.path))")
        _ = try await giver.repair()
        let report = try await giver.export(["de-berlin"], to: usb)
        #expect(report.packages == ["de-berlin"])
    }

    @Test func exportRefusesWhatItCannotDoWell() async throws {
        let site = try TestSite()
        let giver = site.loader()
        try await giver.install(["de-berlin"])
        let used = site.dir.path("used")
        try FileManager.default.createDirectory(at: used, withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: used.appendingPathComponent("notes.txt"))
        await #expect(throws: MapLoaderError.self) { try await giver.export(["de-berlin"], to: used) }
        #expect(try String(contentsOf: used.appendingPathComponent("notes.txt"), encoding: .utf8) == "mine")
        await #expect(throws: MapLoaderError.notInstalled("ch")) { try await giver.export(["ch"], to: site.dir.path("x")) }
        try site.publish(2)
        _ = try await giver.checkForUpdate()
        do {
            try await giver.export(["de-berlin"], to: site.dir.path("y"))
            Issue.record("exported maps older than the site's current version")
        } catch {
            #expect(error.description.contains("update, then export"))
        }
    }

    @Test func exportThroughTheCLI() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        #expect(try await CLI.run(["install", "de-berlin"], site: site, data: data).status == 0)
        let usb = site.dir.path("usb")
        let exported = try await CLI.run(["export", "de-berlin", "--to", usb.path], site: site, data: data)
        #expect(exported.status == 0)
        #expect(exported.stdout.contains("maploader install de-berlin --server \(usb.path)"))
        let other = site.dir.path("other")
        let installed = try await CLI.run([
            "install", "de-berlin", "--server", usb.path, "--data-dir", other.path,
            "--trust-key", site.publicKey.base64,
        ])
        #expect(installed.status == 0)
        #expect(try await CLI.run(["verify", "--server", usb.path, "--data-dir", other.path]).status == 0)
    }
}

/// Mirrors: several sites serving one signed catalog; one dies mid-download and the next
/// continues the file with Range.
@Suite struct MirrorTests {
    @Test func aMirrorThatDiesMidDownloadHandsOverWithoutRefetching() async throws {
        let site = try TestSite(faults: FaultPlan(bytesPerSecond: 4_000))  // the first mirror is slow
        let second = ManifestServer(root: site.site)
        let secondURL = "http://127.0.0.1:\(try second.start())"
        defer { second.stop() }
        let data = site.dir.path("data")
        let loader = MapLoader(
            configuration: .init(
                server: site.url, dataDirectory: data,
                retry: .init(attempts: 2, initialDelay: 0.01, maxDelay: 0.05),
                trust: TrustPolicy(keys: [site.publicKey]), mirrors: [secondURL]))
        let blob = try #require(try site.manifest("v1").root.allNodes.first { $0.id == "de-berlin" }?.artifacts?["base"])
        let partial = data.appendingPathComponent("downloads/\(blob.sha256)")
        // The first mirror dies a third of the way into the largest file: the install is
        // paused there from its own progress callback (so it lands mid-file however busy the
        // machine is), the mirror stopped, and the install resumed.
        let pauser = PauseAtBytes(blob.size / 3)
        await loader.setSynchronousDelegate(pauser)
        let install = loader.start { try await $0.install(["de-berlin"]) }
        pauser.handle.withLock { $0 = install }
        try await RawThread.run { try waitUntil { install.isPaused && install.requestsInFlight == 0 } }
        let kept = FileStatus.of(partial.path)?.size ?? 0
        #expect(kept > 0 && kept < blob.size)
        site.server.stop()
        install.resume()
        let report = try await install.value
        #expect(report.committed)
        #expect(try await loader.verify().ok)
        let fromSecond = second.statistics.bodyBytesSentByPath["/" + SiteLayout.blob(blob.sha256)] ?? 0
        // The second mirror sent only the rest of the file, with Range.
        #expect(fromSecond > 0 && fromSecond < blob.size)
        #expect(second.statistics.statusCounts[206, default: 0] >= 1)
    }

    @Test func bytesThatFailTheHashAreFetchedFromTheNextMirror() async throws {
        // The first mirror flips a byte at offset 5,000 of every file it serves: the small
        // catalog and manifest pass, every larger blob fails its pinned SHA-256.
        let site = try TestSite(faults: FaultPlan(corruptOffset: 5_000))
        let good = ManifestServer(root: site.site)
        let goodURL = "http://127.0.0.1:\(try good.start())"
        defer { good.stop() }
        let data = site.dir.path("data")
        let loader = MapLoader(
            configuration: .init(
                server: site.url, dataDirectory: data,
                trust: TrustPolicy(keys: [site.publicKey]), mirrors: [goodURL]))
        let log = EventLog()
        let events = loader.events()
        let collector = Task { for await event in events { await log.append(event) } }
        let report = try await loader.install(["de-berlin"])
        loader.closeEventStreams()
        await collector.value
        #expect(report.committed)
        #expect(try await loader.verify().ok)
        #expect(
            await log.events.contains {
                if case .connectionLost(_, let reason, _) = $0 {
                    reason.contains("the manifest pins") && reason.contains("trying mirror \(goodURL)")
                } else {
                    false
                }
            })
        // Alone, the corrupting server is refused as before.
        let alone = site.loader(dataDirectory: site.dir.path("alone"))
        await #expect(throws: MapLoaderError.self) { try await alone.install(["de-berlin"]) }
    }

    @Test func aStaleOrDeadMirrorIsSkippedForTheCatalog() async throws {
        let site = try TestSite()
        let stale = site.dir.path("stale")
        try FileManager.default.copyItem(at: site.site, to: stale)  // a mirror left at v1
        try site.publish(2)
        let data = site.dir.path("data")
        // Accept v2 first, so the stale mirror's v1 catalog counts as a rollback.
        _ = try await site.loader(dataDirectory: data).checkForUpdate()
        let loader = MapLoader(
            configuration: .init(
                server: "http://127.0.0.1:\(closedPort())", dataDirectory: data,
                trust: TrustPolicy(keys: [site.publicKey]),
                mirrors: [stale.path, site.url]))
        let report = try await loader.install(["de-berlin"])
        #expect(report.toVersion == "v2")
    }

    @Test func mirrorsThroughTheCLI() async throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let result = try await CLI.run([
            "install", "de-berlin", "--server", "http://127.0.0.1:\(closedPort())", "--server", site.url,
            "--data-dir", data.path, "--trust-key", site.publicKey.base64,
        ])
        #expect(result.status == 0)
        #expect(try await CLI.run(["verify", "--data-dir", data.path]).status == 0)
    }
}
