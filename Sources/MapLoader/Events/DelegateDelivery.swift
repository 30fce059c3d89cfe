extension MapLoader {
    /// Where a loader calls its ``MapLoaderDelegate``. Whichever you choose, calls come one
    /// at a time, in the order of the ``MapLoader/events()`` streams, and an operation
    /// returns only after the delegate has received its last event (``MapLoaderEvent/finished(_:)``
    /// or ``MapLoaderEvent/failed(_:_:)``).
    public enum DelegateDelivery: Sendable {
        /// On the main actor, where an app updates its views: the default. The main actor
        /// must be free to run (an app's run loop, or `await` in a command-line tool's
        /// top-level code); a main thread blocked waiting for an operation never gets the calls.
        case mainActor
        /// On the loader's own delivery task, off the main thread: for a command-line tool,
        /// a server or a background service.
        case background
        /// Isolated to an actor of yours (say, the model that owns the loader).
        case actor(any Actor)
    }
}
