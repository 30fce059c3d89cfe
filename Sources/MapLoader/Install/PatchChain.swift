import Foundation
import MapDelta
import MapModel
import MapPlanner
import MapPlatform
import MapStore
import MapTransfer

extension PlanSession {
    /// Downloads a step's patch blobs and applies them in order to the installed files,
    /// producing the group's target tree in the new generation. Every patch checks the
    /// old bytes it reads and the new bytes it writes; the result must have the
    /// artifact's tree hash. Any failure throws, and the caller falls back to the full
    /// archive.
    func applyChain(
        _ step: GroupStep, item: Int, of items: Int, into builder: GenerationBuilder,
        transfer: TransferLedger
    ) async throws -> [FileEntry] {
        let operation = self.operation
        guard let artifact = step.artifact, !step.patches.isEmpty else {
            throw MapLoaderError.invalidMetadata(what: step.name, detail: "no patches to apply")
        }
        var patchFiles: [URL] = []
        for edge in step.patches {
            patchFiles.append(
                try await fetchBlob(
                    sha256: edge.sha256, size: edge.size,
                    item: "\(step.name) \(edge.from)→\(edge.to)", index: item, of: items,
                    transfer: transfer))
        }
        var source = store.groupDirectory(package: step.package, group: step.group)
        var intermediates: [URL] = []
        // The installed index names an old file that changed where a patch gives no digest
        // for it (a small file kept as it is); without it the patch's tree hash still catches it.
        var files: [FileEntry] = (try? store.index(package: step.package, group: step.group)) ?? []
        // Everything a patch asks for is held to what the manifest declares for the group; a
        // tree between two patches, which it does not describe, to the installed tree and
        // the result together (fixed for the whole chain: no step can grow the next one's).
        let throughLimits = TreeLimits(artifact).through(TreeLimits(files: files.count, bytes: files.saturatingSum(\.size)))
        let hub = self.hub
        let name = step.name
        // Intermediate trees left by a failure go on the blocking threads (they may be large).
        do {
            for (index, patch) in patchFiles.enumerated() {
                let last = index == patchFiles.count - 1
                let target: URL
                if last {
                    target = try builder.makeGroupDirectory(package: step.package, group: step.group)
                } else {
                    target = store.directory.patchScratch()
                    intermediates.append(target)
                }
                progress(.patch, total: artifact.unpackedSize, items: item - 1, totalItems: items, item: name)
                let from = source
                let threads = self.threads
                let oldFiles = files
                let treeHash = step.patches[index].toTreeHash  // the signed manifest's name for the result
                let limits = last ? TreeLimits(artifact) : throughLimits
                // Large files are built in the resume folder with a checkpoint per segment: a run
                // killed in the middle continues there (gc removes what no run comes back for).
                // Files are not fsync'ed one by one: the generation's commit flushes the file
                // system before it becomes current, and an intermediate tree is scratch.
                let resume = store.directory.resume
                let applied = try await offActor {
                    try PatchApplier.apply(
                        patch: patch, oldTree: from, into: target, resumeIn: resume, threads: threads, oldFiles: oldFiles,
                        treeHash: treeHash, limits: limits, durable: false
                    ) { done in
                        hub.progress(
                            operation, .patch, bytes: done, total: artifact.unpackedSize, items: item - 1, totalItems: items, item: name)
                    }
                }
                files = applied.files
                resumedBytes += applied.resumedBytes
                // A tree between two patches is read by the next one only: it goes once that one
                // is done, so a chain holds two trees at most.
                if let used = intermediates.firstIndex(of: source) { await FileSystem.removeTreesOffPool([intermediates.remove(at: used)]) }
                source = target
            }
        } catch {
            await FileSystem.removeTreesOffPool(intermediates)
            throw error
        }
        let treeHash = TreeHash.of(files)
        guard treeHash == artifact.treeHash else {
            throw MapLoaderError.integrityFailed(
                what: "\(step.name) after patching",
                detail: "tree hash \(treeHash.prefix(12))… differs from the manifest's \(artifact.treeHash.prefix(12))…")
        }
        try builder.writeIndex(files, package: step.package, group: step.group)
        return files
    }
}
