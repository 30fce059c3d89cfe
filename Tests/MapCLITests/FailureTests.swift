import Foundation
import ManifestServer
import MapTestSupport
import Testing

@testable import MapLoader

/// Bad input and faults: each is one clear error and leaves installed maps exactly as they were.
@Suite struct FailureTests {
    /// Installs de-berlin, breaks something, tries to install de-hamburg, and checks the
    /// error and that `current/` did not change.
    func expectRefusal(
        _ site: TestSite, attempts: Int = 2, break: () throws -> Void,
        matches: (MapLoaderError) -> Bool
    ) async throws {
        let loader = site.loader(attempts: attempts)
        try await loader.install(["de-berlin"])
        let before = try snapshot(loader.currentFolder)
        try `break`()
        do {
            try await loader.install(["de-hamburg"])
            Issue.record("install succeeded although the site was broken")
        } catch {
            #expect(matches(error), "unexpected error: \(error)")
            #expect(!error.description.contains("\n"))
        }
        #expect(try snapshot(loader.currentFolder) == before)
        let staging = loader.configuration.dataDirectory.appendingPathComponent("staging")
        #expect(try FileManager.default.contentsOfDirectory(atPath: staging.path).isEmpty, "the half-built generation was removed")
    }

    @Test func unknownPackageSuggestsTheClosestID() async throws {
        let site = try TestSite()
        let loader = site.loader()
        await #expect(throws: MapLoaderError.unknownPackage("de-berln", suggestion: "de-berlin")) {
            try await loader.install(["de-berln"])
        }
        #expect(!FileManager.default.fileExists(atPath: loader.currentFolder.path))
    }

    @Test func missingBlobIs404() async throws {
        let site = try TestSite()
        try await expectRefusal(
            site, break: { try FileManager.default.removeItem(at: site.blob("de-hamburg", "base")) },
            matches: { if case .httpStatus(_, 404) = $0 { return true } else { return false } })
    }

    @Test func blobWithWrongBytesFailsItsHash() async throws {
        let site = try TestSite()
        try await expectRefusal(
            site,
            break: {
                let blob = try site.blob("de-hamburg", "base")
                var data = try Data(contentsOf: blob)
                data[data.count / 2] ^= 0xFF
                try data.write(to: blob)
            },
            matches: { if case .integrityFailed(_, let detail) = $0 { return detail.contains("SHA-256") } else { return false } })
    }

    @Test func truncatedBlobOnTheServerIsRefused() async throws {
        let site = try TestSite()
        try await expectRefusal(
            site,
            break: {
                let blob = try site.blob("de-hamburg", "base")
                let data = try Data(contentsOf: blob)
                try data.prefix(data.count / 2).write(to: blob)
            },
            matches: { if case .integrityFailed = $0 { return true } else { return false } })
    }

    @Test func connectionDroppedEveryTimeGivesUpCleanly() async throws {
        // Every body longer than 6 kB is cut: catalog and manifest pass, blobs never do.
        let site = try TestSite(faults: FaultPlan(dropAfterBytes: 6000))
        let loader = site.loader(attempts: 3)
        do {
            try await loader.install(["de-berlin"])
            Issue.record("install succeeded although every download was cut")
        } catch {
            guard case .connectionFailed(let url, let reason) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(url.contains("/blobs/sha256/"))
            #expect(reason.contains("after 3 attempts"))
        }
        #expect(!FileManager.default.fileExists(atPath: loader.currentFolder.path))
    }

    @Test func droppedConnectionsResumeWithRange() async throws {
        // The first three bodies over 6 kB are cut after 6 kB; the client resumes each.
        let site = try TestSite(faults: FaultPlan(dropAfterBytes: 6000, dropCount: 3))
        let loader = site.loader(attempts: 5)
        let log = EventLog()
        let events = loader.events()
        let collector = Task { for await event in events { await log.append(event) } }
        let report = try await loader.install(["de-berlin"])
        loader.closeEventStreams()
        await collector.value
        #expect(report.committed)
        let seen = await log.events
        #expect(seen.filter { if case .connectionLost = $0 { true } else { false } }.count == 3)
        #expect(seen.contains { if case .connectionFound = $0 { true } else { false } })
        #expect(try snapshot(loader.currentFolder.appendingPathComponent("de-berlin/base")) == snapshot(site.release(1, "de-berlin", "base")))
        let stats = site.server.statistics
        #expect(stats.droppedResponses == 3)
        #expect(stats.statusCounts[206, default: 0] >= 1, "a resumed download asks for a range")
        // Resuming re-sends nothing: the bytes served equal the blobs' sizes plus metadata.
        #expect(stats.bodyBytesSent <= report.downloadedBytes + 8000)
        print("resume after 3 drops: \(report.downloadedBytes) B of blobs needed, \(stats.bodyBytesSent) B served in all (metadata included)")
    }

    @Test func malformedManifestIsRefused() async throws {
        let site = try TestSite()
        // Changed bytes without a matching pin: integrity failure (a loader that cached the
        // manifest earlier would not even fetch it again).
        try Data("{ not json".utf8).write(to: site.site.appendingPathComponent(SiteLayout.manifest("v1")))
        do {
            try await site.loader().install(["de-berlin"])
            Issue.record("a manifest that does not match its pin was accepted")
        } catch {
            guard case .integrityFailed(let what, _) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(what.contains("manifest.json"))
        }
        // Pinned correctly but not a manifest: metadata error.
        let other = try TestSite()
        let loader = other.loader()
        let garbage = Data(#"{"formatVersion": 1, "version": "v1"}"#.utf8)
        try garbage.write(to: other.site.appendingPathComponent(SiteLayout.manifest("v1")))
        let catalogURL = other.site.appendingPathComponent(SiteLayout.catalog)
        var catalog = try JSONCoding.decode(Catalog.self, from: Data(contentsOf: catalogURL))
        catalog.versions[0].sha256 = FileHashing.sha256(of: garbage)
        catalog.versions[0].size = Int64(garbage.count)
        catalog.versions[0].unpacked = FilePin(sha256: FileHashing.sha256(of: garbage), size: Int64(garbage.count))
        let data = try catalog.jsonData()
        try data.write(to: catalogURL)
        try SigningKeyFile.sign(data, keyFile: other.dir.path("publisher.key")).jsonData()
            .write(to: other.site.appendingPathComponent(SiteLayout.catalogSignature))
        do {
            try await loader.install(["de-berlin"])
            Issue.record("a malformed manifest was accepted")
        } catch {
            guard case .invalidMetadata(_, let detail) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(detail.contains("missing field"))
        }
    }

    @Test func malformedCatalogIsRefused() async throws {
        let site = try TestSite()
        try Data("[1, 2".utf8).write(to: site.site.appendingPathComponent(SiteLayout.catalog))
        await #expect(throws: MapLoaderError.self) { try await site.loader().install(["de-berlin"]) }
    }

    @Test func serverDownIsAConnectionError() async throws {
        let dir = TemporaryDirectory()
        let port = closedPort()
        let loader = MapLoader(
            configuration: .init(
                server: "http://127.0.0.1:\(port)", dataDirectory: dir.path("data"),
                retry: .init(attempts: 2, initialDelay: 0.01),
                trust: TrustPolicy(allowUnsigned: true)))
        do {
            try await loader.install(["de-berlin"])
            Issue.record("install without a server succeeded")
        } catch {
            guard case .connectionFailed = error else {
                Issue.record("\(error)")
                return
            }
            #expect(error.description.contains("127.0.0.1:\(port)"))
        }
    }

    @Test(.enabled(if: ReadOnlyMount.available, "needs mount(2) for a read-only file system (root ignores chmod)"))
    func readOnlyDataDirectoryIsAStorageError() async throws {
        let site = try TestSite()
        let mount = try ReadOnlyMount()
        defer { mount.unmount() }
        let loader = site.loader(dataDirectory: mount.url.appendingPathComponent("data"))
        try await loader.install(["de-berlin"])
        let before = try snapshot(loader.currentFolder)
        try mount.makeReadOnly()
        do {
            try await loader.install(["de-hamburg"])
            Issue.record("install into a read-only data directory succeeded")
        } catch {
            guard case .storageFailed(_, let reason) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(reason.localizedCaseInsensitiveContains("read-only"))
        }
        #expect(try snapshot(loader.currentFolder) == before)
    }
}

extension FailureTests {
    /// An app shows `error.localizedDescription`: the short description, for every case; the
    /// one-line message stays for logs.
    @Test func localizedDescriptionIsTheShortDescription() {
        let errors: [MapLoaderError] = [
            .invalidParameters("x"), .unknownPackage("a", suggestion: "b"), .unknownGroup("g", known: ["base"]), .requiredGroup("base"),
            .notInstalled("a"), .cancelled, .noServer, .connectionFailed(url: "http://h", reason: "down"),
            .httpStatus(url: "http://h", status: 404), .networkNotAllowed(reason: "cellular"), .integrityFailed(what: "w", detail: "d"),
            .invalidMetadata(what: "w", detail: "d"),
            .invalidArchive(package: "a", group: "g", detail: "d"), .versionUnavailable(installed: "v1", current: "v2"),
            .insufficientSpace(needed: 2, available: 1, path: "/p"), .quotaExceeded(quota: 1, needed: 2, largest: ["a"]),
            .storageFailed(path: "/p", reason: "r"), .busy(pid: 7), .dataDirectoryRefused(path: "/p", reason: "r"),
            .signatureRefused("s"), .rollbackRefused("r"),
        ]
        for error in errors {
            #expect((error as any Error).localizedDescription == error.errorDescription)
            #expect(!error.localizedDescription.contains("could not be completed"))
            #expect(error.technicalDetail == error.description)
        }
    }

    /// Readers never need to write: on a read-only remount of the data directory, and on
    /// one whose file system is full, every reader command works (leases go to the runtime
    /// folder, small fetches to the temporary one) and a writer fails at once with one line.
    @Test(
        .enabled(if: ReadOnlyMount.available, "needs mount(2) for a read-only or full file system (root ignores chmod)"),
        arguments: ["read-only", "full"])
    func everyReaderWorksOnAReadOnlyOrFullDataDirectory(_ storage: String) async throws {
        let site = try TestSite()
        let mount = try ReadOnlyMount(size: "8m")
        defer { mount.unmount() }
        let data = mount.url.appendingPathComponent("data")
        let installed = try await CLI.run(["install", "de-berlin"], site: site, data: data)
        #expect(installed.status == 0, "\(installed.stderr)")
        try site.publish(2)
        if storage == "read-only" {
            try mount.makeReadOnly()
        } else {
            ReadOnlyMount.shell("dd", "if=/dev/zero", "of=\(mount.url.path)/fill", "bs=1M")
            #expect(FileSystem.availableSpace(at: mount.url.path) == 0)
        }
        let readers = [
            ["list"], ["list", "--installed"], ["info", "de-berlin"], ["locate", "52.52", "13.40"], ["verify"],
            ["check-update"], ["du"], ["groups"], ["update", "--dry-run"],
        ]
        for command in readers {
            let result = try await CLI.run(command, site: site, data: data)
            #expect(result.status == (command == ["check-update"] ? 3 : 0), "\(command) on a \(storage) data directory: \(result.stderr)")
        }
        let pinned = try await CLI.run(["pin", "--data-dir", data.path, "--", "cat", "{}/de-berlin/base/meta.json"])
        #expect(pinned.status == 0 && pinned.stdout.contains("Berlin"), "\(pinned.stderr)")
        let writer = try await CLI.run(["install", "de-hamburg"], site: site, data: data)
        #expect(writer.status != 0 && writer.stderr.split(separator: "\n").filter { $0.hasPrefix("error:") }.count == 1, "\(writer.stderr)")
    }
}

extension FailureTests {
    /// The layout of a head unit: maps shipped installed on a read-only partition, updates
    /// written to a writable overlay (Linux overlayfs, the lower folder the read-only data
    /// directory, the upper one on writable storage), the data directory being the merged
    /// folder. Readers and an update work there, and the read-only partition is untouched.
    @Test(.enabled(if: ReadOnlyMount.available, "needs mount(2) for read-only and overlay file systems"))
    func aReadOnlyDataDirectoryUnderAWritableOverlayIsUpdated() async throws {
        let site = try TestSite()
        let shipped = try ReadOnlyMount(size: "16m")
        defer { shipped.unmount() }
        let lower = shipped.url.appendingPathComponent("data")
        let installed = try await CLI.run(["install", "de-berlin"], site: site, data: lower)
        #expect(installed.status == 0, "\(installed.stderr)")
        try shipped.makeReadOnly()
        let writable = try ReadOnlyMount(size: "16m")
        defer { writable.unmount() }
        let merged = writable.url.appendingPathComponent("merged")
        for folder in ["upper", "work", "merged"] {
            try FileManager.default.createDirectory(at: writable.url.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        let options = "lowerdir=\(lower.path),upperdir=\(writable.url.path)/upper,workdir=\(writable.url.path)/work"
        guard ReadOnlyMount.shell("mount", "-t", "overlay", "overlay", "-o", options, merged.path) else {
            print("skipped: this kernel refuses an overlay mount here (overlayfs inside a container?)")
            return
        }
        defer { ReadOnlyMount.shell("umount", merged.path) }
        let listed = try await CLI.run(["list", "--installed"], site: site, data: merged)
        #expect(listed.status == 0 && listed.stdout.contains("de-berlin"), "\(listed.stderr)")
        try site.publish(2)
        let updated = try await CLI.run(["update", "--delta"], site: site, data: merged)
        #expect(updated.status == 0, "\(updated.stderr)")
        let info = try await CLI.run(["info", "de-berlin"], site: site, data: merged)
        #expect(info.status == 0 && info.stdout.contains("v2"), "\(info.stdout) \(info.stderr)")
        let verified = try await CLI.run(["verify"], site: site, data: merged)
        #expect(verified.status == 0, "\(verified.stderr)")
        // The shipped partition still holds version 1, whole.
        let shippedInfo = try await CLI.run(["info", "de-berlin"], site: site, data: lower)
        #expect(shippedInfo.status == 0 && !shippedInfo.stdout.contains("v2"), "\(shippedInfo.stdout)")
        let shippedVerify = try await CLI.run(["verify"], site: site, data: lower)
        #expect(shippedVerify.status == 0, "\(shippedVerify.stderr)")
    }
}
