import Foundation
import MapModel
import MapPlatform

/// What `maploader prune` did, or would do in a dry run.
package struct PruneReport: Sendable, Encodable {
    /// Versions kept in the catalog, newest first.
    package var kept: [String]
    /// Versions dropped from the catalog (already or by this run).
    package var dropped: [String]
    /// Site-relative paths no kept version needs, with how long ago that was first seen
    /// (seconds; 0 when first seen now).
    package var unreferenced: [Unreferenced]
    /// Paths deleted by this run, and their bytes.
    package var deleted: [String]
    package var deletedBytes: Int64
    /// Whether anything was changed (false for a dry run).
    package var applied: Bool

    package struct Unreferenced: Sendable, Encodable {
        package var path: String
        package var bytes: Int64
        package var unreferencedFor: TimeInterval
    }
}

extension Publisher {
    /// Keeps the newest `keep` versions of a site (the current one always among them) and
    /// removes what nothing kept needs: older versions leave the catalog (re-signed with
    /// `keyFile` when the site is signed), and blobs and manifests that no kept version's
    /// manifest names (archives and patch edges), manifest deltas to a dropped version,
    /// and catalog deltas that lead to an older catalog, are deleted once they have been
    /// unreferenced for `grace` seconds, so a client that read the previous catalog a
    /// moment ago still finds its files. The first-seen times live in `.prune.json` in the
    /// site folder (never uploaded). A dry run (`apply: false`) changes nothing.
    package static func prune(
        site siteURL: URL, keep: Int, apply: Bool, grace: TimeInterval,
        keyFile: URL?, now: Date = Date()
    ) throws -> PruneReport {
        guard keep >= 1 else { throw PublishError("--keep must be at least 1: the current version is always kept") }
        let site = SiteWriter(root: siteURL)
        guard var catalog = try site.catalog() else { throw PublishError("\(siteURL.path) has no catalog.json: nothing to prune") }
        // Newest first: the current version, then by publication (catalog order breaks ties).
        let order = catalog.versions.enumerated().sorted {
            ($0.element.version == catalog.current ? 1 : 0, $0.element.published, $0.offset)
                > ($1.element.version == catalog.current ? 1 : 0, $1.element.published, $1.offset)
        }.map(\.element)
        let kept = Array(order.prefix(keep))
        let dropped = order.dropFirst(keep).map(\.version)

        var needed = Set<String>()
        for entry in kept {
            needed.insert(entry.manifest)
            needed.formUnion(try site.partPaths(entry))
            for node in try site.manifest(entry).root.allNodes {
                for artifact in (node.artifacts ?? [:]).values {
                    needed.insert(SiteLayout.blob(artifact.sha256))
                    for edge in artifact.patches ?? [] { needed.insert(SiteLayout.blob(edge.sha256)) }
                }
            }
        }
        var present: [String: Int64] = [:]
        for folder in ["blobs", "versions", SiteLayout.deltas] {
            let root = siteURL.appendingPathComponent(folder)
            guard FileStatus.of(root.path)?.kind == .directory else { continue }
            for file in try FileTree.files(in: root) { present[folder + "/" + file.path] = file.size }
        }
        // Catalog deltas are needed while they lead to the catalog the site serves, and
        // manifest deltas while they lead to a kept version's manifest.
        if let current = site.catalogHash() {
            needed.formUnion(present.keys.filter { $0.hasPrefix(SiteLayout.catalogDeltas(to: current)) })
        }
        let manifestDeltas = kept.compactMap { $0.unpacked.map { SiteLayout.manifestDeltas(to: $0.sha256) } }
        needed.formUnion(present.keys.filter { path in manifestDeltas.contains { path.hasPrefix($0) } })
        let stateFile = siteURL.appendingPathComponent(".prune.json")
        var firstSeen = ((try? Data(contentsOf: stateFile)).flatMap { try? JSONCoding.decode([String: Date].self, from: $0) }) ?? [:]
        let unreferenced = present.keys.filter { !needed.contains($0) }.sorted()
        firstSeen = firstSeen.filter { unreferenced.contains($0.key) }
        for path in unreferenced where firstSeen[path] == nil { firstSeen[path] = now }

        var report = PruneReport(
            kept: kept.map(\.version), dropped: dropped,
            unreferenced: unreferenced.map {
                .init(path: $0, bytes: present[$0] ?? 0, unreferencedFor: now.timeIntervalSince(firstSeen[$0] ?? now))
            },
            deleted: [], deletedBytes: 0, applied: apply)
        guard apply else { return report }
        try site.prepare()
        defer { site.cleanUp() }
        if !dropped.isEmpty {
            try checkSigningContinuity(site: site, keyFile: keyFile, rekey: false, unsigned: keyFile == nil)
            catalog.versions = catalog.versions.filter { !dropped.contains($0.version) }
            catalog.serial += 1
            try writeCatalog(catalog, site: site, keyFile: keyFile)
        }
        for item in report.unreferenced where item.unreferencedFor >= grace {
            try FileManager.default.removeItem(at: siteURL.appendingPathComponent(item.path))
            firstSeen[item.path] = nil
            report.deleted.append(item.path)
            report.deletedBytes += item.bytes
        }
        try site.write(try JSONCoding.encoder(pretty: true).encode(firstSeen), at: ".prune.json")
        return report
    }
}
