import MapModel
import MapPlanner
import MapDelta
import MapStore
import MapTransfer
import MapPlatform
/// Receives a ``MapLoader``'s events. Every method has an empty default, so implement
/// only what you need. Calls arrive in event order, off the main thread.
public protocol MapLoaderDelegate: AnyObject, Sendable {
    /// Progress of the running operation.
    func mapLoader(didUpdateProgress progress: OperationProgress)
    /// Packages were installed.
    func mapLoader(didInstallPackages ids: [String])
    /// Packages were removed.
    func mapLoader(didUninstallPackages ids: [String])
    /// An update check finished; `check.updateAvailable` tells whether one is due.
    func mapLoader(didFindUpdate check: UpdateCheck)
    /// An update was committed.
    func mapLoader(didUpdate report: UpdateReport)
    /// An operation failed; nothing was changed.
    func mapLoader(didFail operation: MapLoaderOperation, error: MapLoaderError)
    /// The network dropped; the request will be retried.
    func mapLoaderDidLoseConnection(url: String, reason: String)
    /// The network came back.
    func mapLoaderDidFindConnection(url: String)
    /// Every event, including those above.
    func mapLoader(didReceive event: MapLoaderEvent)
}

extension MapLoaderDelegate {
    public func mapLoader(didUpdateProgress progress: OperationProgress) {}
    public func mapLoader(didInstallPackages ids: [String]) {}
    public func mapLoader(didUninstallPackages ids: [String]) {}
    public func mapLoader(didFindUpdate check: UpdateCheck) {}
    public func mapLoader(didUpdate report: UpdateReport) {}
    public func mapLoader(didFail operation: MapLoaderOperation, error: MapLoaderError) {}
    public func mapLoaderDidLoseConnection(url: String, reason: String) {}
    public func mapLoaderDidFindConnection(url: String) {}
    public func mapLoader(didReceive event: MapLoaderEvent) {}
}
