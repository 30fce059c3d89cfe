import MapModel
import MapPlanner
import MapDelta
import MapStore
import MapTransfer
import MapPlatform
/// Receives a ``MapLoader``'s events. Every method has an empty default, so implement
/// only what you need. Calls come one at a time, in the order of the ``MapLoader/events()``
/// streams, on the main actor unless ``MapLoader/Configuration/delegateDelivery`` says
/// otherwise, and name the loader they come from (one delegate can serve several loaders).
/// An operation returns once the delegate has received its last event.
///
/// The loader holds its delegate **weakly**, as UIKit and AppKit do: keep a reference to it
/// yourself (``MapLoader/init(configuration:delegate:)``, ``MapLoader/setDelegate(_:)``).
public protocol MapLoaderDelegate: AnyObject, Sendable {
    /// Progress of the running operation.
    func mapLoader(_ loader: MapLoader, didUpdateProgress progress: OperationProgress)
    /// Packages were installed.
    func mapLoader(_ loader: MapLoader, didInstallPackages ids: [String])
    /// Packages were removed.
    func mapLoader(_ loader: MapLoader, didUninstallPackages ids: [String])
    /// An update check finished; `check.updateAvailable` tells whether one is due.
    func mapLoader(_ loader: MapLoader, didFindUpdate check: UpdateCheck)
    /// An update was committed.
    func mapLoader(_ loader: MapLoader, didUpdate report: UpdateReport)
    /// An operation failed; nothing was changed.
    func mapLoader(_ loader: MapLoader, didFail operation: MapLoader.Operation, error: MapLoaderError)
    /// The network dropped; the request will be retried.
    func mapLoader(_ loader: MapLoader, didLoseConnectionTo url: String, reason: String)
    /// The network came back.
    func mapLoader(_ loader: MapLoader, didFindConnectionTo url: String)
    /// Every event, including those above.
    func mapLoader(_ loader: MapLoader, didReceive event: MapLoaderEvent)
}

extension MapLoaderDelegate {
    public func mapLoader(_ loader: MapLoader, didUpdateProgress progress: OperationProgress) {}
    public func mapLoader(_ loader: MapLoader, didInstallPackages ids: [String]) {}
    public func mapLoader(_ loader: MapLoader, didUninstallPackages ids: [String]) {}
    public func mapLoader(_ loader: MapLoader, didFindUpdate check: UpdateCheck) {}
    public func mapLoader(_ loader: MapLoader, didUpdate report: UpdateReport) {}
    public func mapLoader(_ loader: MapLoader, didFail operation: MapLoader.Operation, error: MapLoaderError) {}
    public func mapLoader(_ loader: MapLoader, didLoseConnectionTo url: String, reason: String) {}
    public func mapLoader(_ loader: MapLoader, didFindConnectionTo url: String) {}
    public func mapLoader(_ loader: MapLoader, didReceive event: MapLoaderEvent) {}
}
