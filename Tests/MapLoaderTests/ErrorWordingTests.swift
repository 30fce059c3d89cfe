import Foundation
import MapTestSupport
import Testing

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
        .networkNotAllowed(reason: "the default route goes through wwan0, a cellular (metered) network"),
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
            .connectionFailed, .httpStatus, .networkNotAllowed, .integrityFailed, .invalidMetadata, .invalidArchive, .versionUnavailable,
            .insufficientSpace, .quotaExceeded, .storageFailed, .busy, .dataDirectoryRefused, .signatureRefused,
            .rollbackRefused:
            return true
        }
    }

    @Test func everyErrorReadsAsOneLineWithoutCommandLineWords() {
        #expect(Self.samples.allSatisfy(Self.covers))
        for error in Self.samples {
            let text = error.technicalDetail
            #expect(text == error.description, "the technical detail is the one-line message")
            #expect(!text.contains("\n") && !text.isEmpty)
            #expect(text.range(of: #"(^|\s|\()--[a-z]"#, options: .regularExpression) == nil, "a flag in: \(text)")
            #expect(!text.contains("'maploader ") && !text.contains("MAPLOADER_"), "a command in: \(text)")
        }
    }

    /// What an alert shows: three short sentences (what happened, why, what to do) without
    /// URLs, paths, hashes or process ids, `localizedDescription` the first of them.
    @Test func everyErrorHasThreeTextsAnAppCanShow() {
        for error in Self.samples {
            let texts = [error.errorDescription, error.failureReason, error.recoverySuggestion].compactMap { $0 }
            #expect(texts.count == 3 && Set(texts).count == 3, "\(error.entry.name): \(texts)")
            #expect((error as any Error).localizedDescription == error.errorDescription)
            for text in texts {
                #expect(!text.isEmpty && !text.contains("\n") && text.count < 120, "\(text)")
                #expect(
                    !text.contains("{") && ![".description", ".reason", ".suggestion"].contains { text.hasSuffix($0) },
                    "a placeholder or key left in: \(text)")
                for word in ["://", "/maps", "example.com", "pid", "42", "SHA-256", "catalog.json", "serial", "MapLoader", "errno"] {
                    #expect(!text.contains(word), "'\(word)' in: \(text)")
                }
            }
        }
    }

    /// The strings table: every key an error reads is in it, every key in it is read by
    /// some error, and the template an app copies to translate (Sources/MapModel/Localization)
    /// holds exactly these texts.
    @Test func theStringsTableAndItsTemplateHoldEveryTextOnce() throws {
        let used = Set(Self.samples.flatMap { error in MapLoaderError.Part.allCases.map { "\(error.entry.name).\($0.rawValue)" } })
        #expect(
            used == Set(MapLoaderError.englishTexts.keys),
            "missing: \(used.subtracting(MapLoaderError.englishTexts.keys)), unused: \(Set(MapLoaderError.englishTexts.keys).subtracting(used))")
        let template = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../Sources/MapModel/Localization/en.lproj/MapLoader.strings")
        let text = try String(contentsOf: template, encoding: .utf8)
        var parsed: [String: String] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("\"") {
            let parts = line.dropLast().components(separatedBy: "\" = \"")
            #expect(parts.count == 2, "\(line)")
            guard parts.count == 2, parsed[String(parts[0].dropFirst())] == nil else {
                Issue.record("a key twice or a bad line: \(line)")
                continue
            }
            parsed[String(parts[0].dropFirst())] = String(parts[1].dropLast())
        }
        #expect(parsed == MapLoaderError.englishTexts)
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
                let text = (error as? MapLoaderError)?.technicalDetail ?? "\(error)"
                #expect(text.contains("trust the publisher's public key"), "\(text)")
                #expect(!text.contains("--") && !text.contains("'maploader "), "\(text)")
            }
        }
        let loader = site.loader()
        await #expect {
            try await loader.install(["de-berln"])
        } throws: { error in
            let error = error as? MapLoaderError
            return error?.technicalDetail.contains("did you mean 'de-berlin'") == true && error?.recoverySuggestion == "Did you mean “de-berlin”?"
        }
    }
}
