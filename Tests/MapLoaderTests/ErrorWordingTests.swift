import Foundation
import Testing
import MapTestSupport
@testable import MapLoader

/// What an app's alert shows: `localizedDescription` is the library's one-line message,
/// which speaks of what to do in the library's terms, never of the command's flags.
@Suite struct ErrorWordingTests {
    /// One value of every case (the switch in `covers` fails to compile when a case is added).
    static let samples: [MapLoaderError] = [
        .invalidParameters("no package ids given"), .unknownPackage("de-berln", suggestion: "de-berlin"),
        .unknownPackage("xx", suggestion: nil), .unknownGroup("terrain", known: ["base", "poi"]), .requiredGroup("base"),
        .notInstalled("de-berlin"), .cancelled, .noServer, .connectionFailed(url: "https://maps.example.com", reason: "timed out"),
        .httpStatus(url: "https://maps.example.com/x", status: 404), .httpStatus(url: "https://maps.example.com/x", status: 503),
        .integrityFailed(what: "de-berlin/base", detail: "SHA-256 differs"), .invalidMetadata(what: "catalog.json", detail: "bad JSON"),
        .invalidArchive(package: "de-berlin", group: "base", detail: "a path with .."), .versionUnavailable(installed: "v1", current: "v3"),
        .insufficientSpace(needed: 0, available: 0, path: "/maps"), .insufficientSpace(needed: 9_000_000, available: 100, path: "/maps"),
        .quotaExceeded(quota: 1000, needed: 2000, largest: []), .quotaExceeded(quota: 1000, needed: 2000, largest: ["de-berlin 1 kB"]),
        .storageFailed(path: "/maps/state.json", reason: "unreadable state; repair the data directory"), .busy(pid: 42), .busy(pid: nil),
        .dataDirectoryRefused(path: "/maps", reason: "a folder of other files"), .signatureRefused("no publisher key is trusted"),
        .rollbackRefused("serial 3 is older than 5"),
    ]

    static func covers(_ error: MapLoaderError) -> Bool {
        switch error {
        case .invalidParameters, .unknownPackage, .unknownGroup, .requiredGroup, .notInstalled, .cancelled, .noServer,
            .connectionFailed, .httpStatus, .integrityFailed, .invalidMetadata, .invalidArchive, .versionUnavailable,
            .insufficientSpace, .quotaExceeded, .storageFailed, .busy, .dataDirectoryRefused, .signatureRefused,
            .rollbackRefused:
            return true
        }
    }

    @Test func everyErrorReadsAsOneLineWithoutCommandLineWords() {
        #expect(Self.samples.allSatisfy(Self.covers))
        for error in Self.samples {
            let text = (error as any Error).localizedDescription
            #expect(text == error.description, "localizedDescription is the message")
            #expect(!text.contains("The operation could not be completed"))
            #expect(!text.contains("\n") && !text.isEmpty)
            #expect(text.range(of: #"(^|\s|\()--[a-z]"#, options: .regularExpression) == nil, "a flag in: \(text)")
            #expect(!text.contains("'maploader ") && !text.contains("MAPLOADER_"), "a command in: \(text)")
        }
    }

    /// Messages the library builds from the site and the data directory, reached for real.
    @Test func refusalsOfARealSiteSpeakTheLibrary() async throws {
        let site = try TestSite()
        let dir = TemporaryDirectory()
        let noKeys = MapLoader(configuration: .init(server: site.url, dataDirectory: dir.path("a")))
        for attempt in [{ _ = try await noKeys.packageTree() }, { try await noKeys.install(["de-berlin"]) }] as [() async throws -> Void] {
            do {
                try await attempt()
                Issue.record("an untrusted site was accepted")
            } catch {
                let text = error.localizedDescription
                #expect(text.contains("trust the publisher's public key"), "\(text)")
                #expect(!text.contains("--") && !text.contains("'maploader "), "\(text)")
            }
        }
        let loader = site.loader()
        await #expect {
            try await loader.install(["de-berln"])
        } throws: { error in
            let text = error.localizedDescription
            return text.contains("did you mean 'de-berlin'") && !text.contains("maploader")
        }
    }
}
