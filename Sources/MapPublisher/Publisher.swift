import Foundation
import MapDelta
import MapModel
import MapPlatform
import Synchronization

/// Turns release folders into a static site any HTTP server can host.
///
/// Each group's files become a deterministic archive stored under its SHA-256; a group
/// whose files did not change since an earlier version reuses that version's blob, so
/// clients update it for zero bytes. The new manifest and catalog are written last, so
/// a client never sees a manifest naming a blob that is not there yet.
package enum Publisher {
    /// Publishes the release folder `release` into `site` as `options.version` and makes
    /// it current: the plan of ``PublishPlanner``, its tasks on `jobs` local threads, then
    /// ``PublishAssembler`` (the steps a sharded publish runs on many machines). `log`
    /// receives one line per task and per reused group.
    @discardableResult
    package static func publish(
        release: URL, site siteURL: URL, options: PublishOptions, jobs: Int = defaultJobs,
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws -> PublishReport {
        try checkSigningContinuity(
            site: SiteWriter(root: siteURL), keyFile: options.keyFile, rekey: options.rekey,
            unsigned: options.unsigned)
        let plan = try PublishPlanner.plan(release: release, site: siteURL, options: options)
        let scratch = options.scratch ?? PublishOptions.defaultScratch.appendingPathComponent("maploader-publish-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { if options.scratch == nil { try? FileManager.default.removeItem(at: scratch) } }
        // The archives first, then the patches, each phase on all jobs: the report gives
        // each phase's time, the patches' being what a patch edge costs the publisher.
        let archives = plan.tasks.filter { $0.kind == .archive }.map(\.id)
        // The largest old trees first, so that no long patch starts when the others are
        // done and keeps one job busy alone.
        let patches = plan.tasks.filter { $0.kind == .patch }
            .sorted { ($0.fromArtifact?.unpackedSize ?? 0, $1.id) > ($1.fromArtifact?.unpackedSize ?? 0, $0.id) }.map(\.id)
        let places = PublishTaskRunner.Places(
            plan: plan, release: release, site: siteURL, scratch: scratch, threads: threadsPerPatch(jobs: jobs, tasks: patches.count))
        let archiveSeconds = try timed { try runTasks(archives, of: plan, in: places, jobs: jobs, log: log) }
        let patchSeconds = try timed { try runTasks(patches, of: plan, in: places, jobs: jobs, log: log) }
        var report = try PublishAssembler.assemble(
            plan, site: siteURL, keyFile: options.keyFile, rekey: options.rekey,
            unsigned: options.unsigned, log: log)
        report.archiveSeconds = archiveSeconds
        report.patchSeconds = patchSeconds
        return report
    }

    /// The wall seconds `work` takes.
    private static func timed(_ work: () throws -> Void) throws -> Double {
        try Elapsed.measure(work).seconds
    }

    /// Threads a local publish uses by default: one per core.
    package static var defaultJobs: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }

    /// The threads each of `tasks` patches running on `jobs` threads gives its files and
    /// segments: the jobs the tasks leave idle, shared out (one patch on 8 jobs: 8 threads;
    /// 4 patches: 2 each), so that the threads in all stay near `jobs` times the segments'.
    package static func threadsPerPatch(jobs: Int, tasks: Int) -> Int {
        max(1, jobs / max(1, min(jobs, tasks)))
    }

    /// Runs `ids` of `plan` on `jobs` threads, each taking the next task when it finishes
    /// one; the first failure stops the others from starting new tasks and is thrown.
    package static func runTasks(
        _ ids: [Int], of plan: PublishPlan, in places: PublishTaskRunner.Places, jobs: Int,
        log: @escaping @Sendable (String) -> Void
    ) throws {
        guard !ids.isEmpty else { return }
        let queue = TaskQueue(ids)
        DispatchQueue.concurrentPerform(iterations: max(1, min(jobs, ids.count))) { _ in
            while let id = queue.next() {
                do {
                    log(try PublishTaskRunner.run(id, of: plan, in: places))
                } catch {
                    queue.fail(error)
                }
            }
        }
        if let failure = queue.failure { throw failure }
    }

    /// Re-signs a site's catalog with a new serial and expiry, without a new version (for
    /// publishers whose catalog is about to expire).
    @discardableResult
    package static func resign(site siteURL: URL, keyFile: URL, validity: TimeInterval?, rekey: Bool = false) throws -> Catalog {
        let site = SiteWriter(root: siteURL)
        guard var catalog = try site.catalog() else { throw PublishError("\(siteURL.path) has no catalog.json to sign") }
        try checkSigningContinuity(site: site, keyFile: keyFile, rekey: rekey, unsigned: false)
        try site.prepare()
        defer { site.cleanUp() }
        catalog.serial += 1
        catalog.expires = validity.map { Date().addingTimeInterval($0) }
        try writeCatalog(catalog, site: site, keyFile: keyFile)
        return catalog
    }

    /// A site signed with one key stays signed with it: clients that trust it refuse
    /// anything else. Another key needs `rekey`, no key needs `unsigned`.
    static func checkSigningContinuity(site: SiteWriter, keyFile: URL?, rekey: Bool, unsigned: Bool) throws {
        // On a site with roots, the root says which keys sign catalogs.
        if try SiteRoots.newest(in: site.root) != nil {
            _ = try SiteRoots.rootVersion(for: site.root, keyFile: keyFile)
            return
        }
        let file = site.root.appendingPathComponent(SiteLayout.catalogSignature)
        guard let data = try? Data(contentsOf: file) else { return }
        guard let existing = try? JSONCoding.decode(CatalogSignature.self, from: data) else {
            throw PublishError("\(file.path) is unreadable: restore it, or remove it to publish as if the site were new")
        }
        let signedBy = existing.signatures.map(\.keyid)
        guard let keyFile else {
            if unsigned { return }
            throw PublishError(
                "\(site.root.path) is signed (key \(signedBy.joined(separator: ", "))): pass --key with that key file; publishing it unsigned makes every client that trusts it refuse it (--unsigned does so anyway)"
            )
        }
        let key = try SigningKeyFile.publicKey(of: keyFile)
        if signedBy.contains(key.id) || rekey { return }
        throw PublishError(
            "\(site.root.path) is signed with key \(signedBy.joined(separator: ", ")), not with \(keyFile.path) (key \(key.id)): clients that trust the old key would refuse the site; use the old key file, or pass --rekey and give clients the new public key"
        )
    }

    /// Writes the signature first, then the catalog's delta and the timestamp that pins
    /// it, then the catalog: a client that reads the new catalog with the old signature
    /// refuses it and retries later, never accepts a wrong one; and the timestamp is never
    /// behind the catalog, even after a crash between the two (a timestamp ahead of the
    /// catalog is passed over; one behind would hide the new catalog from devices that
    /// kept the old one).
    static func writeCatalog(_ catalog: Catalog, site: SiteWriter, keyFile: URL?) throws {
        var catalog = catalog
        catalog.rootVersion = try SiteRoots.rootVersion(for: site.root, keyFile: keyFile)
        let data = try catalog.jsonData()
        guard let keyFile else {
            // An unsigned site has no timestamp: only a signature makes one worth reading.
            try? FileManager.default.removeItem(at: site.root.appendingPathComponent(SiteLayout.timestamp))
            try? FileManager.default.removeItem(at: site.root.appendingPathComponent(SiteLayout.catalogSignature))
            try site.write(data, at: SiteLayout.catalog)
            return
        }
        let key = try SigningKeyFile.read(keyFile)
        try site.write(try CatalogSignature.sign(data, with: key).jsonData(), at: SiteLayout.catalogSignature)
        // A device that kept the previous catalog fetches the new one as a delta from it.
        if let previous = try? Data(contentsOf: site.root.appendingPathComponent(SiteLayout.catalog)), previous != data {
            // No checksum: the device checks what it rebuilds against the signed timestamp's pin.
            let delta = try ZstdFrame.compress(Array(data), level: 19, prefix: Array(previous), checksum: false)
            try site.write(Data(delta), at: SiteLayout.catalogDelta(to: FileHashing.sha256(of: data), from: FileHashing.sha256(of: previous)))
        }
        let timestamp = try SignedTimestamp.file(of: CatalogTimestamp(of: catalog, bytes: data)) { try CatalogSignature.sign($0, with: key) }
        try site.write(timestamp, at: SiteLayout.timestamp)
        try site.write(data, at: SiteLayout.catalog)
    }
}

/// The task numbers a local publish hands out to its threads, and the first failure.
private final class TaskQueue: Sendable {
    private let state: Mutex<(pending: ArraySlice<Int>, failure: (any Error)?)>

    init(_ ids: [Int]) { state = Mutex((ids[...], nil)) }

    /// The next task to run, or `nil` when none is left or one has failed.
    func next() -> Int? {
        state.withLock { state in
            guard state.failure == nil else { return nil }
            return state.pending.popFirst()
        }
    }

    /// Records a failure (the first one wins).
    func fail(_ error: any Error) {
        state.withLock { state in
            if state.failure == nil { state.failure = error }
        }
    }

    /// The first failure, if any.
    var failure: (any Error)? { state.withLock { $0.failure } }
}
