import ArgumentParser
import Foundation
import MapLoader
import MapModel
import MapPublisher

/// `maploader prune <site> --keep N [--delete]`.
struct PruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Drop old versions from a site and delete the blobs and manifests nothing kept needs.",
        discussion: """
            Keeps the newest N versions (the current one always). Without --delete it only \
            lists what would go. With --delete, older versions leave the catalog (re-signed with \
            --key when the site is signed), and files that no kept version's manifest names \
            (archives, patches, manifests) are deleted once they have been unreferenced for the \
            grace period, so a client that read the previous catalog a moment ago still finds \
            them: run prune again later (a daily job) to delete them. For a site in S3, upload \
            afterwards with scripts/publish-s3.sh … --delete.

            Examples:
              maploader prune ./site --keep 3
              maploader prune ./site --keep 3 --delete --key publisher.key
            """)

    @Argument(help: "The site folder.")
    var site: String

    @Option(name: .long, help: "How many versions to keep, the current one included.")
    var keep: Int

    @Flag(name: .long, help: "Change the site (default: only list what would go).")
    var delete = false

    @Option(name: .long, help: "Hours a file must have been unreferenced before it is deleted.")
    var graceHours: Double = 24

    @Option(name: .long, help: "The signing key file, to re-sign the catalog of a signed site.")
    var key: String?

    @Flag(name: .long, help: "Print the report as JSON.")
    var json = false

    func validate() throws {
        guard keep >= 1 else { throw ValidationError("--keep must be at least 1: the current version is always kept") }
        guard graceHours >= 0 else { throw ValidationError("--grace-hours must be 0 or more") }
    }

    func run() async throws {
        do {
            let report = try Publisher.prune(
                site: URL(fileURLWithPath: site), keep: keep, apply: delete,
                grace: graceHours * 3600, keyFile: key.map { URL(fileURLWithPath: $0) })
            if json { return Output.json(report) }
            let waiting = report.unreferenced.filter { !report.deleted.contains($0.path) }
            Output.line(
                "kept \(report.kept.joined(separator: ", "))"
                    + (report.dropped.isEmpty ? "" : "; \(delete ? "dropped" : "would drop") \(report.dropped.joined(separator: ", "))"))
            if delete {
                Output.line(
                    "deleted \(report.deleted.count) file(s), \(ByteFormat.string(report.deletedBytes))"
                        + (waiting.isEmpty ? "" : "; \(waiting.count) more go once unreferenced for \(graceHours) h (run prune again)"))
            } else {
                let bytes = report.unreferenced.reduce(Int64(0)) { $0 + $1.bytes }
                Output.line("\(report.unreferenced.count) file(s), \(ByteFormat.string(bytes)), no longer needed; run with --delete to remove them")
            }
        } catch {
            throw PublisherFailure(error, doing: "prune \(site)", json: json).exit()
        }
    }
}
