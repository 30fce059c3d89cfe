import MapDelta
import MapModel
import MapPlanner
import MapPlatform
import MapStore
import MapTransfer

/// Receives a ``MapLoader``'s events: one method, required, with the event as an enum, so
/// a delegate cannot be half-implemented (a method with a wrong signature does not compile)
/// and a switch over ``MapLoaderEvent`` says which events it handles.
///
/// ```swift
/// @MainActor final class MapsScreen: @preconcurrency MapLoaderDelegate {
///     var percent = 0
///     func mapLoader(_ loader: MapLoader, didReceive event: MapLoaderEvent) {
///         switch event {
///         case .progress(let progress): percent = Int(progress.overallFraction * 100)
///         case .installed(let ids): print("ready offline: \(ids)")
///         case .failed(_, let error): print(error.errorDescription ?? "")
///         default: break
///         }
///     }
/// }
/// ```
///
/// Calls come one at a time, in the order of the ``MapLoader/events()`` streams, on the
/// main actor unless ``MapLoader/Configuration/delegateDelivery`` says otherwise, and name
/// the loader they come from (one delegate can serve several loaders). An operation
/// returns once the delegate has received its last event.
///
/// The protocol itself is not bound to the main actor, since the delivery may be moved off
/// it. A main-actor class (a view controller, a SwiftUI model) conforms with
/// `@preconcurrency`, as above: its method then runs on the main actor, and Swift checks
/// at each call that it came there (it does with the default delivery; with another, the
/// check stops the app at the first call, which names the mistake). A class that is not
/// bound to an actor conforms plainly.
///
/// The loader holds its delegate **weakly**, as UIKit and AppKit do, and says so in its
/// initializer (``MapLoader/init(configuration:weakDelegate:)``): keep a reference to it
/// yourself. A delegate the loader finds released while it was set is reported once on
/// standard error. ``MapLoader/events()`` streams and ``OperationHandle``s need no owner.
public protocol MapLoaderDelegate: AnyObject, Sendable {
    /// Every event of the loader, in order.
    func mapLoader(_ loader: MapLoader, didReceive event: MapLoaderEvent)
}
