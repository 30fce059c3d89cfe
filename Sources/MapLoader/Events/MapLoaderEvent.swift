import Foundation
import MapDelta
import MapModel
import MapPlanner
import MapPlatform
import MapStore
import MapTransfer

extension MapLoader {
    /// The kind of operation an event belongs to.
    public enum Operation: String, Sendable, Hashable, Codable {
        /// Reading the package tree, a package, or the data groups.
        case list
        /// ``MapLoader/install(_:)``.
        case install
        /// ``MapLoader/planInstall(_:)``: planning an install without changing anything.
        case planInstall
        /// ``MapLoader/uninstall(_:)`` and ``MapLoader/uninstallAll()``.
        case uninstall
        /// ``MapLoader/selectDataGroup(_:)``.
        case selectGroup
        /// ``MapLoader/deselectDataGroup(_:)``.
        case deselectGroup
        /// ``MapLoader/checkForUpdate(strategy:)``.
        case checkForUpdate
        /// ``MapLoader/performUpdate(strategy:dryRun:)``.
        case update
        /// ``MapLoader/verify()``.
        case verify
        /// ``MapLoader/repair()``.
        case repair
        /// ``MapLoader/forgetTrustedKeys(_:)``.
        case forgetKeys
        /// ``MapLoader/collectGarbage()``.
        case collectGarbage
        /// ``MapLoader/setTags(_:on:)``.
        case tag
        /// ``MapLoader/setQuota(_:)``.
        case configure
        /// ``MapLoader/export(_:to:)``.
        case export
    }
}

/// The name the package uses for ``MapLoader/Operation``.
package typealias MapLoaderOperation = MapLoader.Operation

extension OperationProgress {
    /// The phase of a running operation, in the order they happen.
    public enum Phase: String, Sendable, Hashable, Codable {
        /// Reading the catalog and manifest and planning.
        case resolve
        /// Fetching archives and patches.
        case download
        /// Checking hashes of downloaded and produced bytes.
        case verify
        /// Unpacking full archives.
        case extract
        /// Applying patches.
        case patch
        /// Switching to the new generation.
        case commit
    }
}

/// The name the package uses for ``OperationProgress/Phase``.
package typealias OperationPhase = OperationProgress.Phase

/// How far a running operation has come.
public struct OperationProgress: Sendable, Hashable, Codable {
    /// The operation.
    public var operation: MapLoader.Operation
    /// Its current phase.
    public var phase: OperationProgress.Phase
    /// Bytes done in this phase.
    public var completedBytes: Int64
    /// Bytes this phase will take in all (0 when unknown).
    public var totalBytes: Int64
    /// Items (archives, patches, groups) done in this phase.
    public var completedItems: Int
    /// Items in this phase.
    public var totalItems: Int
    /// What is being worked on, e.g. `de-berlin/base`.
    public var item: String?
    /// Which operation of this loader the progress belongs to: the same number on every
    /// event of one operation, a larger one for each later operation.
    public var operationID: Int
    /// How far the whole operation has come, 0…1: downloads, unpacking and patching
    /// weighted by their bytes, across every group and phase. Within one operation it
    /// never goes backwards, and it is 1 on the operation's last progress event. Drive a
    /// progress bar with this.
    public var overallFraction: Double

    /// A progress value.
    /// - Parameters:
    ///   - operation: The operation.
    ///   - phase: Its current phase.
    ///   - completedBytes: Bytes done in this phase.
    ///   - totalBytes: Bytes this phase will take in all (0 when unknown).
    ///   - completedItems: Items done in this phase.
    ///   - totalItems: Items in this phase.
    ///   - item: What is being worked on.
    ///   - operationID: Which operation of the loader it belongs to (set by the loader).
    ///   - overallFraction: How far the whole operation has come (set by the loader).
    public init(
        operation: MapLoader.Operation, phase: OperationProgress.Phase, completedBytes: Int64 = 0, totalBytes: Int64 = 0,
        completedItems: Int = 0, totalItems: Int = 0, item: String? = nil, operationID: Int = 0,
        overallFraction: Double = 0
    ) {
        self.operation = operation
        self.phase = phase
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
        self.completedItems = completedItems
        self.totalItems = totalItems
        self.item = item
        self.operationID = operationID
        self.overallFraction = overallFraction
    }

    /// Completed fraction of the current **phase**, 0…1 (by bytes when known, else by
    /// items). Phases of several groups interleave, so this jumps back and forth; a
    /// progress bar wants ``overallFraction``.
    public var fraction: Double {
        if totalBytes > 0 { return min(1, Double(completedBytes) / Double(totalBytes)) }
        if totalItems > 0 { return min(1, Double(completedItems) / Double(totalItems)) }
        return 0
    }
}

/// Everything a ``MapLoader`` reports, in order. The same values reach the
/// ``MapLoaderDelegate`` and every ``MapLoader/events()`` stream.
public enum MapLoaderEvent: Sendable, Hashable {
    /// An operation left the queue and began.
    case started(MapLoader.Operation)
    /// The operation waits for another process (or loader) that is changing the data
    /// directory; `pid` names it when known. It starts once that one has finished.
    case waitingForLock(pid: Int?)
    /// Progress of the running operation.
    case progress(OperationProgress)
    /// What an install or update will do for one group, and why.
    case planned(Plan.Step)
    /// A request failed; it is retried after `retryIn` seconds.
    case connectionLost(url: String, reason: String, retryIn: Double)
    /// A request succeeded again after a loss.
    case connectionFound(url: String)
    /// Packages were installed (all groups committed together).
    case installed([String])
    /// Packages were removed.
    case uninstalled([String])
    /// The data-group selection changed.
    case groupsChanged(selected: [String])
    /// An update check finished.
    case updateChecked(UpdateCheck)
    /// An update was committed.
    case updated(UpdateReport)
    /// Installed files were re-hashed.
    case verified(VerifyReport)
    /// An operation finished successfully.
    case finished(MapLoader.Operation)
    /// An operation failed; nothing was changed.
    case failed(MapLoader.Operation, MapLoaderError)
}
