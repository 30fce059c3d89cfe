import Foundation
import ManifestServer
import MapPublisher
import MapTestSupport
import Testing

@testable import MapLoader

/// What a new user meets first, through the real `maploader` binary: arguments, help,
/// JSON, exit codes, where files go.
@Suite struct CLITests {
    /// Parses stdout as exactly one JSON object.
    static func json(_ result: CLI.Result) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
        return try #require(value as? [String: Any], "stdout is one JSON object: \(result.stdout)")
    }

    @Test func negativeCoordinatesAndLatLonPairsLocate() throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        for (arguments, expected) in [
            (["37.77", "-122.42"], nil), (["52.52,13.40"], "de-berlin"),
            (["52.5", "13.4"], "de-berlin"),
        ] as [([String], String?)] {
            let result = try CLI.run(["locate"] + arguments + ["--json"] + CLI.client(site, data))
            let object = try Self.json(result)
            if let expected {
                #expect(result.status == 0)
                #expect(object["id"] as? String == expected)
            } else {
                // No package of the test tree covers San Francisco: a documented "not found".
                #expect(result.status == 4, "\(result.stderr)")
                #expect(object["exitCode"] as? Int == 4)
            }
        }
        let invalid = try CLI.run(["locate", "91", "0"] + CLI.client(site, data))
        #expect(invalid.status == 64)
        let missing = try CLI.run(["locate", "-12.5"] + CLI.client(site, data))
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("give a latitude and a longitude"))
    }

    @Test func sharedOptionsWorkBeforeAndAfterTheCommand() throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let before = try CLI.run(CLI.client(site, data) + ["--json", "install", "de-berlin"])
        #expect(before.status == 0, "\(before.stderr)")
        let after = try CLI.run(["list", "--installed", "--json"] + CLI.client(site, data))
        #expect(after.status == 0)
        #expect(after.stdout.contains("\"de-berlin\""))
        let nested = try CLI.run(CLI.client(site, data) + ["groups", "select", "transit", "--json"])
        #expect(try Self.json(nested)["selected"] as? Bool == true)
    }

    /// Every option the client commands share (the options that `install`, `list` and
    /// `verify` all list) is one the front parser moves after the command, and the main help
    /// names it: an option added to the client commands but not to the front list fails here
    /// (`--add-trust-key` once did: "Unknown option" before the command).
    @Test func everyClientOptionMayComeBeforeTheCommand() throws {
        func options(_ command: String) throws -> Set<String> {
            let help = try CLI.run([command, "--help"])
            let names = help.stdout.split(separator: "\n").compactMap { line -> String? in
                guard let match = line.firstMatch(of: /^  (?:-[a-z], )?(--[a-z-]+)/) else { return nil }
                return String(match.1)
            }
            return Set(names).subtracting(["--help", "--version"])
        }
        let shared = try options("install").intersection(options("list")).intersection(options("verify"))
        #expect(shared.count >= 12, "\(shared.sorted())")
        let main = try CLI.run(["--help"]).stdout.replacingOccurrences(of: "\n", with: " ")
        let listed = try #require(main.firstMatch(of: /Options shared by the client commands \(([^)]*)\)/)).1
        let named = Set(listed.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(named == shared, "the main help names \(named.sorted()), the commands take \(shared.sorted())")
        let site = try TestSite()
        let data = site.dir.path("data")
        let key = site.publicKey.base64
        let front = try CLI.run(["--add-trust-key", key, "--server", site.url, "--data-dir", data.path, "list"])
        #expect(front.status == 0, "\(front.stderr)")
        #expect(!front.stderr.contains("Unknown option"), "\(front.stderr)")
    }

    @Test func versionHelpAndUnknownCommands() throws {
        let version = try CLI.run(["--version"])
        #expect(version.status == 0)
        #expect(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0.3.0")
        let typo = try CLI.run(["instal", "de-berlin"])
        #expect(typo.status == 64)
        #expect(typo.stderr.contains("Did you mean 'install'?"))
        let unknownHelp = try CLI.run(["help", "nonexistent"])
        #expect(unknownHelp.status == 64)
        #expect(unknownHelp.stderr.contains("unknown command 'nonexistent'"))
        let publishHelp = try CLI.run(["help", "publish"])
        #expect(publishHelp.stdout.contains("manifest.json.zst"))
        let keygenHelp = try CLI.run(["help", "keygen"])
        #expect(!keygenHelp.stdout.contains("maploader --trust-key KEY"))
        let main = try CLI.run(["--help"])
        #expect(!main.stdout.contains("check-update && "), "an update check that exits 3 would never update")
    }

    @Test func everyJSONCommandPrintsOneDocumentOnSuccessAndFailure() throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let dir = site.dir
        // Failures: one object with a numeric exit code.
        let failures: [([String], Int)] = [
            (["locate", "0", "0", "--json"] + CLI.client(site, data), 4),
            (["install", "atlantis", "--json"] + CLI.client(site, data), 4),
            (["list", "--json", "--data-dir", data.path], 64),
            (["publish", dir.path("missing").path, "--site", dir.path("s").path, "--version", "v1", "--json"], 1),
            (["keygen", dir.path("publisher.key").path, "--json"], 64),
            (["instal", "--json"], 64),
        ]
        for (arguments, code) in failures {
            let result = try CLI.run(arguments, environment: ["MAPLOADER_SERVER": ""])
            #expect(result.status == Int32(code), "\(arguments): \(result.stderr)")
            let object = try Self.json(result)
            #expect(object["exitCode"] as? Int == code, "\(arguments)")
            #expect((object["error"] as? String)?.isEmpty == false)
        }
        // Successes.
        let select = try CLI.run(["groups", "select", "transit", "--json"] + CLI.client(site, data))
        #expect(try Self.json(select)["group"] as? String == "transit")
        let deselect = try CLI.run(["groups", "deselect", "transit", "--json"] + CLI.client(site, data))
        #expect(try Self.json(deselect)["selected"] as? Bool == false)
        let keygen = try CLI.run(["keygen", dir.path("second.key").path, "--json"])
        #expect(PublicKey(base64: try Self.json(keygen)["publicKey"] as? String ?? "") != nil)
        let sign = try CLI.run(["sign", "--site", site.site.path, "--key", dir.path("publisher.key").path, "--json"])
        #expect(try Self.json(sign)["serial"] as? Int == 2)
        let serve = try CLI.start(["serve", site.site.path, "--port", "0", "--json"])
        defer { serve.0.terminate() }
        var served = ""
        for _ in 0..<500 where !served.contains("}") {
            served = (try? String(contentsOf: serve.output, encoding: .utf8)) ?? ""
            usleep(20_000)
        }
        let object = try #require(try JSONSerialization.jsonObject(with: Data(served.utf8)) as? [String: Any])
        #expect((object["port"] as? Int ?? 0) > 0)
    }

    /// `--network` and `--transport` take only the names they list (a usage error, exit 64,
    /// naming the choices); `--network unmetered` installs on this machine's wired network,
    /// through each transport, and works before the command as after it.
    @Test func networkAndTransportOptionsAreChecked() async throws {
        let site = try TestSite(revisions: [1])
        let data = site.dir.path("data")
        let bogus = try await CLI.run(["install", "de-berlin", "--network", "satellite"] + CLI.client(site, data))
        #expect(bogus.status == 64)
        #expect(bogus.stderr.contains("any or unmetered"), "\(bogus.stderr)")
        let wrongTransport = try await CLI.run(["list", "--transport", "carrier-pigeon"] + CLI.client(site, data))
        #expect(wrongTransport.status == 64)
        #expect(wrongTransport.stderr.contains("curl or foundation"), "\(wrongTransport.stderr)")
        let fromEnvironment = try await CLI.run(["list"] + CLI.client(site, data), environment: ["MAPLOADER_NETWORK": "cheap"])
        #expect(fromEnvironment.status == 64 && fromEnvironment.stderr.contains("MAPLOADER_NETWORK"), "\(fromEnvironment.stderr)")
        let installed = try await CLI.run(["--network", "unmetered", "--transport", "foundation", "install", "de-berlin"] + CLI.client(site, data))
        #expect(installed.status == 0, "\(installed.stderr)")
        let listed = try await CLI.run(["list", "--installed", "--network", "unmetered", "--transport", "curl"] + CLI.client(site, data))
        #expect(listed.status == 0 && listed.stdout.contains("de-berlin"), "\(listed.stderr)")
    }

    @Test func exitCodesMeanWhatTheTableSays() async throws {
        let site = try TestSite(revisions: [1])
        let data = site.dir.path("data")
        func run(_ arguments: [String], server: String? = nil) throws -> CLI.Result {
            try CLI.run(
                arguments + [
                    "--server", server ?? site.url, "--data-dir", data.path,
                    "--trust-key", site.publicKey.base64,
                ])
        }
        #expect(try run(["install", "de-berlin"]).status == 0)
        #expect(try run(["check-update"]).status == 0)
        // 1: storage failure (the data directory lies below a file).
        #expect(try await CLI.run(["list", "--server", site.url, "--data-dir", "/dev/null/maps"]).status == 1)
        // 4: unknown package or group; not installed.
        #expect(try run(["install", "atlantis"]).status == 4)
        #expect(try run(["groups", "select", "nope"]).status == 4)
        #expect(try run(["uninstall", "ch"]).status == 4)
        // 5: network (connection refused); a listing of installed maps is then read offline (0).
        #expect(try run(["check-update"], server: "http://127.0.0.1:\(closedPort())").status == 5)
        #expect(try run(["list"], server: "http://127.0.0.1:\(closedPort())").status == 0)
        // 7: signature refused.
        #expect(try await CLI.run(["list", "--server", site.url, "--data-dir", site.dir.path("other").path]).status == 7)
        // 64: usage (no server, a bad server address, an empty data directory, a bad option).
        #expect(try await CLI.run(["check-update", "--data-dir", data.path]).status == 64)
        #expect(try run(["list"], server: "127.0.0.1:8080").status == 64)
        #expect(try await CLI.run(["list", "--data-dir", "", "--server", site.url]).status == 64)
        #expect(try await CLI.run(["keygen", site.dir.path("publisher.key").path]).status == 64)
        #expect(
            try await CLI.run([
                "publish", site.dir.path("r1").path, "--site", site.site.path, "--version", "v9",
                "--level", "99",
            ]).status == 64)
        #expect(
            try await CLI.run([
                "publish", site.dir.path("r1").path, "--site", site.site.path, "--version", "v9",
                "--patch-depth", "-1",
            ]).status == 64)
        #expect(
            try await CLI.run([
                "publish", site.dir.path("r1").path, "--site", site.site.path, "--version", "v9",
                "--valid-days", "-5",
            ]).status == 64)
        // 3: update available; 6: verify finds a change.
        try site.publish(2)
        #expect(try run(["check-update"]).status == 3)
        try Data("changed".utf8).write(to: data.appendingPathComponent("current/de-berlin/base/meta.json"))
        #expect(try run(["verify"]).status == 6)
        #expect(try run(["repair"]).status == 0)
        // 130: interrupted; nothing changes. At 300 B/s the download would take 90 s; the
        // watch for its start runs on its own thread (other tests may keep Swift's pool busy),
        // so the interrupt lands in the download however loaded the machine is.
        let slow = ManifestServer(root: site.site, faults: FaultPlan(bytesPerSecond: 300))
        let slowPort = try slow.start()
        defer { slow.stop() }
        let before = try CrashTests.installed(data)
        let interrupted = try CLI.start(["update", "--full", "--server", "http://127.0.0.1:\(slowPort)", "--data-dir", data.path])
        let errors = interrupted.errors
        let pid = interrupted.0.processIdentifier
        try await RawThread.run {
            // (The bound only keeps a CLI that never downloads from hanging the suite.)
            var polls = 0
            while polls < 3_000, !((try? String(contentsOf: errors, encoding: .utf8)) ?? "").contains("download") {
                usleep(20_000)
                polls += 1
            }
            kill(pid, SIGINT)
        }
        let stopped = try CLI.finish(interrupted)
        #expect(stopped.status == 130, "\(stopped.stderr)")
        #expect(try CrashTests.installed(data) == before)
        // 9: the installed version is gone from the site (a new site holding only v2).
        let fresh = TemporaryDirectory("maploader-fresh")
        try Publisher.publish(
            release: site.dir.path("r2"), site: fresh.path("site"),
            options: PublishOptions(
                version: "v2", level: 3, validity: 3600,
                keyFile: site.dir.path("publisher.key")))
        // Its serial must not be older than the one this device accepted (2).
        for _ in 0..<2 { try Publisher.resign(site: fresh.path("site"), keyFile: site.dir.path("publisher.key"), validity: 3600) }
        let other = ManifestServer(root: fresh.path("site"))
        let port = try other.start()
        defer { other.stop() }
        #expect(try run(["install", "ch"], server: "http://127.0.0.1:\(port)").status == 9)
    }

    @Test func uninstallOfAnUnknownIDSaysSo() throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let result = try CLI.run(["uninstall", "de-berlinn"] + CLI.client(site, data))
        #expect(result.status == 4)
        #expect(result.stderr.contains("unknown package 'de-berlinn': did you mean 'de-berlin'?"))
    }

    @Test func nothingIsWrittenOutsideTheDataDirectory() throws {
        let site = try TestSite()
        let home = site.dir.path("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let data = site.dir.path("data")
        let result = try CLI.run(
            ["install", "de-berlin"] + CLI.client(site, data),
            environment: ["HOME": home.path, "XDG_CACHE_HOME": "", "XDG_DATA_HOME": ""])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: home.path).isEmpty)
        // With no data directory named, maps go below $HOME (not the password database's home).
        let defaulted = try CLI.run(
            ["install", "ch", "--server", site.url, "--trust-key", site.publicKey.base64],
            environment: ["HOME": home.path, "XDG_CACHE_HOME": "", "XDG_DATA_HOME": ""])
        #expect(defaulted.status == 0, "\(defaulted.stderr)")
        #expect(FileManager.default.fileExists(atPath: home.path + "/.local/share/maploader/current/ch/base"))
    }

    @Test func serveSaysWhatIsWrongInASentence() throws {
        let site = try TestSite()
        let taken = try CLI.run(["serve", site.site.path, "--port", "\(URL(string: site.url)!.port!)"])
        #expect(taken.status == 1)
        #expect(taken.stderr.contains("is already in use"))
        let notAFolder = try CLI.run(["serve", site.dir.path("nope").path, "--port", "0"])
        #expect(notAFolder.stderr.contains("is not a folder"))
        let empty = site.dir.path("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let serve = try CLI.start(["serve", empty.path, "--port", "0"])
        defer { serve.0.terminate() }
        var errors = ""
        for _ in 0..<500 where !errors.contains("no catalog.json") {
            errors = (try? String(contentsOf: serve.errors, encoding: .utf8)) ?? ""
            usleep(20_000)
        }
        #expect(errors.contains("warning:") && errors.contains("no catalog.json"))
    }

    @Test func publishingKeepsASignedSiteSigned() throws {
        let site = try TestSite()
        let other = site.dir.path("other.key")
        #expect(try CLI.run(["keygen", other.path]).status == 0)
        let release = site.dir.path("r1").path
        let unsigned = try CLI.run(["publish", release, "--site", site.site.path, "--version", "v5"])
        #expect(unsigned.status == 1)
        #expect(unsigned.stderr.contains("is signed"))
        let rekeyed = try CLI.run(["publish", release, "--site", site.site.path, "--version", "v5", "--key", other.path])
        #expect(rekeyed.status == 1)
        #expect(rekeyed.stderr.contains("--rekey"))
        #expect(FileManager.default.fileExists(atPath: site.site.appendingPathComponent("catalog.json.sig").path))
        let allowed = try CLI.run(["publish", release, "--site", site.site.path, "--version", "v5", "--key", other.path, "--rekey"])
        #expect(allowed.status == 0, "\(allowed.stderr)")
    }

    @Test func infoListAndCheckUpdateSayWhatAPersonNeeds() throws {
        let site = try TestSite()
        let data = site.dir.path("data")
        let info = try CLI.run(["info", "de-berlin"] + CLI.client(site, data))
        #expect(info.stdout.contains("base") && info.stdout.contains("(selected)") && info.stdout.contains("transit"))
        let empty = try CLI.run(["list", "--installed"] + CLI.client(site, data))
        #expect(empty.stdout.contains("nothing is installed"))
        #expect(try CLI.run(["install", "de-berlin"] + CLI.client(site, data)).status == 0)
        #expect(try CLI.run(["groups", "select", "transit"] + CLI.client(site, data)).status == 0)
        let check = try CLI.run(["check-update"] + CLI.client(site, data))
        #expect(check.status == 3)
        #expect(check.stdout.contains("data-group selection changed (+transit)"))
    }

    @Test func aChainIsLabelledFromTheInstalledVersion() throws {
        let site = try TestSite(revisions: [1])
        let data = site.dir.path("data")
        #expect(try CLI.run(["install", "germany"] + CLI.client(site, data)).status == 0)
        try site.publish(2)
        try site.publish(3)
        let check = try CLI.run(["check-update"] + CLI.client(site, data))
        #expect(check.status == 3)
        #expect(!check.stdout.contains("v2→v3") && !check.stdout.contains("v1→v2 "), "\(check.stdout)")
        #expect(check.stdout.contains("v1→"), "\(check.stdout)")
    }

    /// Piped, progress is one line per group and phase with the group's number of all;
    /// no line counts past the total, and the commit, which is no group, has no count (the
    /// tracker's closing event says 1 of 1, which once read "commit (2/1)" when it was the
    /// first commit event the renderer saw).
    @Test func pipedProgressLinesNeverCountPastTheTotal() throws {
        let site = try TestSite(revisions: [1])
        let data = site.dir.path("data")
        #expect(try CLI.run(["install", "de-berlin"] + CLI.client(site, data)).status == 0)
        try site.publish(2)
        let updated = try CLI.run(["update"] + CLI.client(site, data))
        #expect(updated.status == 0, "\(updated.stderr)")
        let counted = updated.stderr.split(separator: "\n").compactMap { line -> (Int, Int)? in
            guard let open = line.lastIndex(of: "("), line.hasSuffix(")") else { return nil }
            let numbers = line[line.index(after: open)..<line.index(before: line.endIndex)].split(separator: "/").compactMap { Int($0) }
            return numbers.count == 2 ? (numbers[0], numbers[1]) : nil
        }
        #expect(!counted.isEmpty, "\(updated.stderr)")
        #expect(counted.allSatisfy { $0.0 >= 1 && $0.0 <= $0.1 }, "\(updated.stderr)")
        #expect(updated.stderr.contains("commit") && !updated.stderr.contains("commit ("), "\(updated.stderr)")
    }

    @Test func theProgressBarFitsANarrowTerminal() throws {
        let site = try TestSite()
        let slow = ManifestServer(root: site.site, faults: FaultPlan(bytesPerSecond: 200_000))
        let port = try slow.start()
        defer { slow.stop() }
        let data = site.dir.path("data")
        let transcript = site.dir.path("pty.out")
        // `script` gives the CLI a real terminal, 40 columns wide.
        let command =
            "stty cols 40; \(CLI.binary.path) install germany --server http://127.0.0.1:\(port) "
            + "--data-dir \(data.path) --trust-key \(site.publicKey.base64)"
        let script = Process()
        script.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        script.arguments = ["-qfec", command, transcript.path]
        script.standardOutput = FileHandle.nullDevice
        try script.run()
        script.waitUntilExit()
        #expect(script.terminationStatus == 0)
        let text = try String(contentsOf: transcript, encoding: .utf8)
        // A redraw is "\r ESC[2K text" with no newline; permanent lines end in one.
        let redrawn = text.components(separatedBy: "\r").filter { $0.hasPrefix("\u{1B}[2K") && !$0.contains("\n") }
            .map { $0.replacingOccurrences(of: "\u{1B}[2K", with: "") }
            .filter { !$0.isEmpty }
        #expect(!redrawn.isEmpty, "a bar was drawn")
        #expect(redrawn.allSatisfy { $0.count < 40 }, "\(redrawn.filter { $0.count >= 40 })")
        // While bytes are still coming, the bar shows the download, never another phase.
        let phases = redrawn.map { String($0.prefix(8)).trimmingCharacters(in: .whitespaces) }
        if let first = phases.firstIndex(of: "download"), let last = phases.lastIndex(of: "download") {
            #expect(phases[first...last].allSatisfy { $0 == "download" }, "\(phases)")
        }
    }

    /// Help pages carry no stray line-continuation backslashes, and a folder site that does
    /// not exist is named as such (not as a site to republish).
    @Test func helpPagesAndFolderSitesReadAsWritten() async throws {
        let top = try await CLI.run(["--help"])
        let commands = top.stdout.components(separatedBy: "SUBCOMMANDS:").last!.split(separator: "\n")
            .compactMap { line -> String? in line.hasPrefix("  ") && !line.hasPrefix("   ") ? line.split(separator: " ").first.map(String.init) : nil
            }
        #expect(commands.count > 20, "\(commands)")
        for command in commands {
            let help = try await CLI.run(["help", command])
            #expect(!help.stdout.contains("\\"), "maploader help \(command) shows a backslash")
        }
        let dir = TemporaryDirectory()
        let typo = try await CLI.run(["list", "--server", dir.path("no-such-stick").path, "--data-dir", dir.path("data").path])
        #expect(typo.status == 5 && typo.stderr.contains("does not exist") && !typo.stderr.contains("republish"), "\(typo.stderr)")
    }
}
