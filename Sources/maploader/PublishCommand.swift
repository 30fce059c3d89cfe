import ArgumentParser
import Foundation
import MapLoader
import MapPublisher

/// `maploader publish <release> --site <dir> --version <label>`.
struct PublishCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Add a release folder to a site as a new version and make it current.",
        discussion: """
        A release folder holds tree.json (groups and the package tree) and \
        data/<package>/<group>/… (the files of each leaf's groups). The site gets \
        content-addressed archives under blobs/, versions/<v>/manifest.json and catalog.json. \
        Groups whose files did not change reuse their earlier archive.
        """)

    @Argument(help: "The release folder.")
    var release: String

    @Option(name: .long, help: "The site folder (created if missing).")
    var site: String

    @Option(name: .long, help: "The new version's label, e.g. 2026.11.")
    var version: String

    @Option(name: .long, help: "Archive format: tar.zst or tar.gz.")
    var format: String = "tar.zst"

    @Option(name: .long, help: "Compression level (zstd 1–19, gzip 1–9).")
    var level: Int = 19

    @Option(name: .long, help: "Write patches from this many previous versions of each changed group.")
    var patchDepth: Int = 3

    @Option(name: .long, help: ArgumentHelp("Sign the catalog with this key file (maploader keygen). Without it the site is unsigned.", valueName: "key-file"))
    var key: String?

    @Option(name: .long, help: "Days the catalog stays valid; clients refuse it afterwards (0: never expires).")
    var validDays: Double = 30

    @Flag(name: .long, help: "Print the report as JSON.")
    var json = false

    func run() throws {
        guard let format = ArchiveFormat(rawValue: format) else {
            throw ValidationError("--format must be tar.zst or tar.gz")
        }
        let options = PublishOptions(version: version, format: format, level: level, patchDepth: patchDepth,
                                     validity: validDays > 0 ? validDays * 86400 : nil,
                                     keyFile: key.map { URL(fileURLWithPath: $0) })
        let quiet = json
        do {
            let report = try Publisher.publish(release: URL(fileURLWithPath: release), site: URL(fileURLWithPath: site),
                                               options: options, log: { if !quiet { Output.error("  " + $0) } })
            if json { return Output.json(report) }
            Output.line("published \(report.version) (serial \(report.serial)): \(report.packages) packages, " +
                        "\(report.groups) groups, \(report.newArchives) new archives, \(report.reusedArchives) reused, " +
                        "\(report.patches) patches, \(ByteFormat.string(report.bytesWritten)) written")
        } catch let error as MapLoaderError {
            Output.error("error: \(error)")
            throw ExitCode(1)
        } catch let error as PublishError {
            Output.error("error: \(error)")
            throw ExitCode(1)
        } catch {
            Output.error("error: cannot publish \(release) to \(site): \((error as NSError).localizedDescription)")
            throw ExitCode(1)
        }
    }
}
