package import Foundation
import MapModel
import MapPlatform

/// The one place that names what a data directory holds. Every other part asks it for a
/// path; none spells a folder or file name of its own.
///
/// ```
/// <root>/.maploader                                 marker: {"format": n}
/// <root>/settings.json                              group selection, trust, quota, tags
/// <root>/current -> generations/<n>                 the live generation, switched by one rename
///                                                   (a file holding "generations/<n>" where
///                                                   the file system has no symbolic links)
/// <root>/current.<n>                                the new pointer, just before that rename
/// <root>/generations/<n>/<package>/<group>/…        installed trees (readers use current/…)
/// <root>/generations/<n>/state.json                 what generation n holds
/// <root>/generations/<n>/.index/<pkg>/<group>.json  every file's path, size, SHA-256
/// <root>/staging/gen-<n>/                           the next generation being built
/// <root>/staging/patch-<uuid>/                      a patch chain's intermediate tree
/// <root>/staging/.probe-<uuid>                      the clone and hard-link probe
/// <root>/downloads/<sha256>                         partial and finished downloads (resumed)
/// <root>/downloads/background/                      finished background downloads no request
///                                                   waited for, kept for the one that will
/// <root>/downloads/resume/                          half-built large files of a patch apply,
///                                                   their checkpoints and locks (resumed)
/// <root>/cache/manifests/<sha256>[.ids]             verified manifests and their part ids
/// <root>/cache/site/                                the accepted catalog, its signature or timestamp, roots
/// <root>/leases/<n>.<id>.lease                      readers' pins of a generation
/// <root>/locks/write.lock, locks/settings.lock      the writer's and the settings' flocks
/// ```
///
/// `staging/` is emptied by every writer when it starts; `downloads/` and the caches are
/// kept for resumes and offline reads until ``Store/collectGarbage(keepManifests:grace:)``.
package struct DataDirectory: Sendable, Hashable {
    /// The data directory itself.
    package let root: URL

    /// The data directory at `root` (nothing is touched).
    package init(_ root: URL) { self.root = root.standardizedFileURL }

    private func child(_ name: String) -> URL { root.appendingPathComponent(name) }

    /// The marker that makes a folder a MapLoader data directory.
    package var marker: URL { child(".maploader") }
    /// The settings shared by every process using the directory.
    package var settingsFile: URL { child("settings.json") }
    /// The pointer to the live generation (``CurrentPointer``).
    package var current: URL { child("current") }
    /// The pointer made for generation `number` just before it is renamed over ``current``.
    package func currentLink(to number: Int) -> URL { child("current.\(number)") }
    /// What ``currentLink(to:)`` points at, relative to the root.
    package func currentLinkTarget(_ number: Int) -> String { "generations/\(number)" }
    /// Every generation kept.
    package var generations: URL { child("generations") }
    /// Generation `number`.
    package func generation(_ number: Int) -> URL { generations.appendingPathComponent("\(number)") }
    /// The state file of the generation in `folder`.
    package static func stateFile(in folder: URL) -> URL { folder.appendingPathComponent("state.json") }
    /// The file index of an installed group, relative to its generation.
    package static func indexPath(package: String, group: String) -> String { ".index/\(package)/\(group).json" }
    /// Work in progress of the writer; emptied when a writer starts.
    package var staging: URL { child("staging") }
    /// Where generation `number` is built.
    package func stagedGeneration(_ number: Int) -> URL { staging.appendingPathComponent("gen-\(number)") }
    /// A new folder name for a patch chain's intermediate tree.
    package func patchScratch() -> URL { staging.appendingPathComponent("patch-\(UUID().uuidString)") }
    /// A new file name for the probe of clones and hard links.
    package func sharingProbe() -> URL { staging.appendingPathComponent(".probe-\(UUID().uuidString)") }
    /// Partial and finished downloads, named by SHA-256 so a retry resumes them.
    package var downloads: URL { child("downloads") }
    /// The download of the blob with this SHA-256.
    package func download(_ sha256: String) -> URL { downloads.appendingPathComponent(sha256) }
    /// Responses of background download tasks that ended while no request waited for them
    /// (a pause, the app away), kept until a request asks for the same bytes.
    package var backgroundDownloads: URL { downloads.appendingPathComponent("background") }
    /// Half-built large files of a patch apply, with their checkpoints and locks, so a
    /// killed apply resumes (the patch codec names the files inside).
    package var resume: URL { downloads.appendingPathComponent("resume") }
    /// Verified manifests by SHA-256, so an unchanged manifest is never downloaded twice.
    package var manifestCache: URL { child("cache/manifests") }
    /// The accepted catalog, its signature or the timestamp that pinned it, and roots as
    /// published (for exports, offline reads, and polls that read the timestamp alone).
    package var siteCache: URL { child("cache/site") }
    /// Readers' leases on generations.
    package var leases: URL { child("leases") }
    /// The lock files.
    package var locks: URL { child("locks") }
    /// The writer's lock: one writer at a time.
    package var writeLock: URL { locks.appendingPathComponent("write.lock") }
    /// The settings' lock: one change of the settings at a time.
    package var settingsLock: URL { locks.appendingPathComponent("settings.lock") }
    /// The folders ``Store/prepare()`` makes.
    package var folders: [URL] { [generations, staging, downloads, leases, locks] }

    /// Names a data directory may hold at its root; a directory without the marker that
    /// holds only these (one from before the marker existed) is adopted, anything else refused.
    package static let ownNames: Set<String> = [
        "generations", "current", "staging", "downloads", "settings.json", "cache", "leases", "locks", ".maploader",
    ]
    /// Beginnings of names being made at the root (new links, temporary files).
    package static let transientPrefixes = ["current.", ".settings.json.", "..maploader."]

    /// Removes the resume files of interrupted patch applies (a disk that filled: keeping
    /// them would keep it full), old-layout ones included. Call only while holding the
    /// write lock.
    package func removeResumeFiles() {
        FileSystem.removeTree(resume)
        removeOldLayoutResumeFiles()
    }

    /// Removes resume files of the layout before `downloads/resume/` (`downloads/apply-…`),
    /// which no apply reads any more. Call only while holding the write lock.
    package func removeOldLayoutResumeFiles() {
        for name in FileSystem.names(in: downloads.path) where name.hasPrefix("apply-") {
            FileSystem.removeTree(downloads.appendingPathComponent(name))
        }
    }

    /// Leftover `current.<n>` pointers of a switch that was interrupted.
    package func strayCurrentLinks() -> [URL] {
        FileSystem.names(in: root.path).filter { $0.hasPrefix("current.") }.map(child)
    }
}
