package import Foundation

extension FileSystem {
    /// Removes each tree on ``BlockingExecutor``'s threads, never Swift's cooperative pool: a
    /// staged generation or a patch chain's intermediate tree may hold gigabytes in thousands
    /// of files. Runs to its end even when the caller is cancelled (it is the cleanup of a
    /// cancelled or failed change).
    package static func removeTreesOffPool(_ trees: [URL]) async {
        guard !trees.isEmpty else { return }
        _ = try? await offActor {
            for tree in trees { FileSystem.removeTree(tree) }
        }
    }
}
