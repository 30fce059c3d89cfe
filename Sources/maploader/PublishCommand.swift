import ArgumentParser
import Foundation
import MapDelta
import MapLoader
import MapModel
import MapPublisher

/// `maploader publish <release> --site <dir> --version <label>`.
struct PublishCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Add a release folder to a site as a new version and make it current.",
        discussion: """
            A release folder holds tree.json (groups and the package tree) and \
            data/<package>/<group>/… (the files of each leaf's groups). The site gets \
            content-addressed archives under blobs/, versions/<v>/manifest.json.zst and catalog.json. \
            Groups whose files did not change reuse their earlier archive.
            """)

    @Argument(help: "The release folder.")
    var release: String

    @Option(name: .long, help: "The site folder (created if missing).")
    var site: String

    @Option(name: .long, help: "The new version's label, e.g. 2026.11.")
    var version: String

    @OptionGroup var flags: PublishFlags

    @Option(
        name: .long, parsing: .unconditional,
        help: "Tasks (archives, patches) to run at once, the threads they leave idle going to a patch's files; default: one per core.")
    var jobs: Int?

    @Option(
        name: .long,
        help: "A folder for unpacked old versions and patch scratch (default: a new folder in $TMPDIR, else /var/tmp).")
    var scratch: String?

    @Flag(name: .long, help: "Print the report as JSON.")
    var json = false

    func validate() throws {
        try flags.check()
        if let jobs, jobs < 1 { throw ValidationError("--jobs must be 1 or more") }
    }

    func run() throws {
        var options = flags.options(version: version)
        options.scratch = scratch.map(URL.init(fileURLWithPath:))
        let quiet = json
        do {
            let report = try Publisher.publish(
                release: URL(fileURLWithPath: release), site: URL(fileURLWithPath: site),
                options: options, jobs: jobs ?? Publisher.defaultJobs,
                log: { if !quiet { Output.error("  " + $0) } })
            if json { return Output.json(report) }
            Output.line(report.summary)
        } catch {
            throw PublisherFailure(error, doing: "publish \(release) to \(site)", json: json).exit()
        }
    }
}

/// The options `publish` and `shard plan` share: how archives and patches are made and
/// how the catalog is signed.
struct PublishFlags: ParsableArguments {
    @Option(name: .long, help: "Archive format: tar.zst or tar.gz.")
    var format: String = "tar.zst"

    @Option(
        name: .long, parsing: .unconditional,
        help: "Compression level: zstd 1–19 (default 19), gzip 1–9 (default 9).")
    var level: Int?

    @Option(
        name: .long, parsing: .unconditional,
        help: "Write patches from this many previous versions of each changed group (0–16).")
    var patchDepth: Int = 3

    @Option(
        name: .long,
        help: ArgumentHelp("Sign the catalog with this key file (maploader keygen). Without it the site is unsigned.", valueName: "key-file"))
    var key: String?

    @Option(
        name: .long, parsing: .unconditional,
        help: "Days the catalog stays valid; clients refuse it afterwards (0: never expires).")
    var validDays: Double = 30

    @Option(
        name: .long, parsing: .unconditional,
        help:
            "Publish a tree with more leaves than this as an index plus parts of at most this many leaves, so clients fetch only the parts they need (0: one manifest file)."
    )
    var manifestParts: Int = 256

    @Option(
        name: .long, parsing: .unconditional,
        help: "zstd level of patches (1–22): the time budget; 19 gives the smallest patches for the time, lower levels encode several times faster.")
    var patchLevel: Int = 19

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Cut files larger than twice this into patch segments of this size: the most memory a client needs to apply a patch, besides the mapped old file (e.g. 32MB, the default).",
            valueName: "size"))
    var segmentSize: String?

    @Flag(name: .long, help: "Sign a site that is signed with another key (clients must be given the new public key).")
    var rekey = false

    @Flag(name: .long, help: "Publish a signed site without a key (every client that trusts it will refuse it).")
    var unsigned = false

    @Flag(name: .long, help: "Publish files with hard links outside the release (made by cp -al or rsync --link-dest); without it they are refused.")
    var allowHardLinks = false

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Patches without LZMA2 payloads, which every client build applies.",
            discussion:
                "LZMA2 makes small files' payloads about a tenth smaller, but an app built without liblzma (the default app configuration) cannot apply such a patch and downloads the full archive instead."
        ))
    var noLzma = false

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Patch tile archives of zstd tiles inside their tiles.",
            discussion:
                "A file of no known container (a PMTiles archive whose tiles are zstd-compressed) is patched inside its zstd frames where this build's zstd rebuilds them byte for byte: a patch then costs about the changed tiles' content. Only a client that links the same zstd version applies such a patch; the site says which, and a client of another version downloads the full archive instead."
        ))
    var zstdFrames = false

    /// Refuses option values out of range. Called from the commands' own `validate()`:
    /// ArgumentParser reports an option group's validation error as `--version` when the
    /// command line holds `--version` (as `publish --version v9` does).
    func check() throws {
        guard let format = ArchiveFormat(rawValue: format) else { throw ValidationError("--format must be tar.zst or tar.gz") }
        let levels = format == .tarGzip ? 1...9 : 1...19
        if let level, !levels.contains(level) {
            throw ValidationError("--level \(level) is out of range: \(format.rawValue) takes \(levels.lowerBound)–\(levels.upperBound)")
        }
        guard (0...16).contains(patchDepth) else { throw ValidationError("--patch-depth must be between 0 and 16") }
        guard validDays >= 0, validDays.isFinite else { throw ValidationError("--valid-days must be 0 (never expires) or more") }
        if let segmentSize {
            guard let bytes = ByteFormat.parse(segmentSize), (64 << 10...SegmentedDelta.maxSegmentLength).contains(bytes) else {
                throw ValidationError("--segment-size must be a size between 64KB and 48MB, e.g. 32MB")
            }
        }
        guard (1...22).contains(patchLevel) else { throw ValidationError("--patch-level must be between 1 and 22") }
        guard manifestParts >= 0 else { throw ValidationError("--manifest-parts must be 0 (never split) or more") }
        if unsigned && key != nil { throw ValidationError("--unsigned and --key contradict each other: pick one") }
    }

    /// The options for publishing `version`; the publication time is `SOURCE_DATE_EPOCH`
    /// when set (reproducible sites), else now.
    func options(version: String) -> PublishOptions {
        let format = ArchiveFormat(rawValue: format) ?? .tarZstd
        var options = PublishOptions(
            version: version, format: format, level: level ?? (format == .tarGzip ? 9 : 19),
            patchDepth: patchDepth, validity: validDays > 0 ? validDays * 86400 : nil,
            keyFile: key.map { URL(fileURLWithPath: $0) }, rekey: rekey, unsigned: unsigned)
        options.manifestPartLeaves = manifestParts
        options.patchLevel = patchLevel
        options.allowHardLinks = allowHardLinks
        if noLzma { options.lzma = false }
        options.zstdFrames = zstdFrames
        options.segmentLength = segmentSize.flatMap(ByteFormat.parse)
        if let epoch = ProcessInfo.processInfo.environment["SOURCE_DATE_EPOCH"].flatMap(TimeInterval.init) {
            options.published = Date(timeIntervalSince1970: epoch)
        }
        return options
    }
}

extension PublishReport {
    /// The line `publish` and `shard assemble` print.
    var summary: String {
        "published \(version) (serial \(serial)): \(packages) packages, \(groups) groups, \(newArchives) new archives, "
            + "\(reusedArchives) reused, \(patches) patches, \(ByteFormat.string(bytesWritten)) written" + timing
    }

    /// How long the archives and the patches took, when this process made them.
    private var timing: String {
        guard let archiveSeconds, let patchSeconds else { return "" }
        return " (archives \(String(format: "%.2f", archiveSeconds)) s, patches \(String(format: "%.2f", patchSeconds)) s)"
    }
}

/// A failed publisher command (publish, keygen, sign): one line on stderr, a JSON object
/// with `--json`, and the documented exit code (64 for a caller's mistake, 1 otherwise).
struct PublisherFailure {
    let message: String
    let code: Int32
    let json: Bool

    init(_ error: any Error, doing what: String, json: Bool) {
        switch error {
        case let error as MapLoaderError:
            message = "\(error)"
            code = Failure(error: error, json: json).exitCode
        case let error as PublishError:
            message = error.description
            code = 1
        default:
            message = "cannot \(what): \((error as NSError).localizedDescription)"
            code = 1
        }
        self.json = json
    }

    func exit() -> ExitCode {
        Output.error("error: \(message)")
        if json { Output.json(ErrorJSON(error: message, exitCode: code)) }
        return ExitCode(code)
    }
}
