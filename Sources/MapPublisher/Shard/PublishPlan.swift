import Foundation
import MapModel
import MapPlatform

/// Everything needed to publish one version, cut into independent tasks that any batch
/// system can run (`maploader shard plan|run|assemble`): one task per group archive to
/// write and one per patch edge to build. A task's output is a content-addressed blob, so
/// running a task twice, or on two machines at once, gives the same bytes.
///
/// The single-machine `publish` is the same plan, its tasks run on local threads, then
/// the same assembly.
package struct PublishPlan: Sendable, Codable, Equatable {
    /// The plan file format this build reads and writes.
    package static let currentFormat = 1

    /// Refused when it is not ``currentFormat``.
    package var planFormat: Int
    /// The version to publish.
    package var version: String
    /// The catalog serial the new catalog gets.
    package var serial: Int
    /// SHA-256 of the site's `catalog.json` when the plan was made (`nil`: a new site).
    /// Assembly refuses a site whose catalog has changed since.
    package var baseCatalog: String?
    /// The publication time written into the catalog (whole seconds).
    package var published: Date
    /// Archive format and level.
    package var format: ArchiveFormat
    /// Compression level of archives.
    package var level: Int
    /// How long the catalog stays valid, in seconds; `nil` never expires.
    package var validity: TimeInterval?
    /// Trees with more leaves are published as an index plus parts of at most this many
    /// leaves (0: always one manifest file).
    package var manifestPartLeaves: Int
    /// Patches cut files larger than twice this into segments of this size (`nil`: the default).
    package var segmentLength: Int64?
    /// The zstd level of patches.
    package var patchLevel: Int
    /// Whether patches may carry LZMA2 payloads (``PublishOptions/lzma``); `nil` in plans
    /// that predate it (yes).
    package var lzma: Bool?
    /// Whether patches may see through zstd frames (``PublishOptions/zstdFrames``); `nil`
    /// in plans that predate it (no).
    package var zstdFrames: Bool? = nil
    /// The release folder when the plan was made (tasks may be told another path).
    package var release: String
    /// The site folder when the plan was made (tasks may be told another path).
    package var site: String
    /// The release's data groups.
    package var groups: [DataGroup]
    /// The release's package tree, without artifacts.
    package var root: PackageNode
    /// Each leaf's data groups, in tree order.
    package var units: [Unit]
    /// The tasks, numbered from 0 in this order.
    package var tasks: [Task]

    /// One data group of one leaf.
    package struct Unit: Sendable, Codable, Equatable {
        /// The leaf package.
        package var package: String
        /// The data group.
        package var group: String
        /// The tree hash of its files in the release.
        package var treeHash: String
        /// An earlier version's archive of the same files, reused as it is; `nil` when a
        /// task writes a new one.
        package var reused: Artifact?
        /// Patch edges earlier versions published that are still on the site.
        package var keptEdges: [PatchEdge]
        /// The task writing the archive, when not reused.
        package var archiveTask: Int?
        /// The tasks building patches to this tree, most recent old version first.
        package var patchTasks: [Int]
    }

    /// One unit of work.
    package struct Task: Sendable, Codable, Equatable {
        /// Archive the leaf's group, or build a patch to it.
        package enum Kind: String, Sendable, Codable {
            /// Write the group's archive as a blob.
            case archive
            /// Build the patch from an earlier version's tree.
            case patch
        }

        /// Its number.
        package var id: Int
        /// What it does.
        package var kind: Kind
        /// The leaf package.
        package var package: String
        /// The data group.
        package var group: String
        /// The tree hash the release folder must still have.
        package var treeHash: String
        /// For a patch: the version patched from.
        package var fromVersion: String?
        /// For a patch: that version's archive (unpacked to diff against).
        package var fromArtifact: Artifact?

        /// A digest of everything that decides this task's output (the task itself and the
        /// plan's encoding settings): a result recorded for another plan of the same version
        /// (other data, other settings, shifted task numbers) never passes for this one.
        package func digest(in plan: PublishPlan) -> String {
            let settings =
                "\(plan.version) \(plan.format.rawValue) \(plan.level) \(plan.patchLevel) \(plan.segmentLength ?? 0)"
                + (plan.lzma == false ? " no-lzma" : "") + (plan.zstdFrames == true ? " zstd-frames" : "")
            let task = (try? JSONCoding.encoder(pretty: false).encode(self)) ?? Data()
            return FileHashing.sha256(of: Data(settings.utf8) + task)
        }

        /// A short name for logs, e.g. `de-berlin/base` or `de-berlin/base 2026.10→`.
        package var label: String {
            "\(package)/\(group)" + (fromVersion.map { " patch from \($0)" } ?? " archive")
        }
    }

    /// Reads a plan file.
    package static func read(_ file: URL) throws -> PublishPlan {
        let data: Data
        do {
            data = try Data(contentsOf: file)
        } catch {
            throw PublishError("cannot read the plan \(file.path): \((error as NSError).localizedDescription)")
        }
        let plan: PublishPlan
        do {
            plan = try JSONCoding.decode(PublishPlan.self, from: data)
        } catch {
            throw PublishError("\(file.path) is not a publish plan (\(error)); make one with 'maploader shard plan'")
        }
        guard plan.planFormat == currentFormat else {
            throw PublishError(
                "\(file.path) is a plan of format \(plan.planFormat); this maploader reads format \(currentFormat): plan again with it")
        }
        return plan
    }

    /// Writes the plan as JSON.
    package func write(to file: URL) throws {
        try JSONCoding.encoder(pretty: false).encode(self).write(to: file, options: .atomic)
    }
}

/// What a finished task left in the site's staging folder (`.publish/<version>/`).
package struct PublishTaskResult: Sendable, Codable, Equatable {
    /// The task's number.
    package var task: Int
    /// SHA-256 of its output: the archive blob, or the staged patch.
    package var sha256: String
    /// Bytes of its output.
    package var size: Int64
    /// For an archive: bytes of the files.
    package var unpackedSize: Int64?
    /// For an archive: number of files.
    package var files: Int?
    /// For a patch: why some files are encoded byte-level (the patch statistics' notes).
    package var notes: [String]?
    /// For a patch: bytes of the files it writes (``PatchEdge/writeBytes``).
    package var writeBytes: Int64?
    /// For a patch: what it writes where files are cloned (``PatchEdge/cloneWriteBytes``).
    package var cloneWriteBytes: Int64?
    /// For a patch: the optional codecs its payloads need (``PatchEdge/codecs``).
    package var codecs: [String]?
    /// ``PublishPlan/Task/digest(in:)`` of the task that wrote it.
    package var taskDigest: String?
}
