import Foundation
import MapTransfer

extension MapLoader {
    /// Connects this loader to its background session when the system relaunched the app
    /// for that session's events, and calls `completionHandler` on the main thread once
    /// the session has delivered them all (the finished downloads kept for the update that
    /// asks for them). Call it from your app delegate's
    /// `application(_:handleEventsForBackgroundURLSession:completionHandler:)`, with a
    /// loader made of the same configuration as at launch:
    ///
    /// ```swift
    /// func application(
    ///     _ application: UIApplication, handleEventsForBackgroundURLSession identifier: String,
    ///     completionHandler: @escaping () -> Void
    /// ) {
    ///     let handled = loader.handleEventsForBackgroundURLSession(identifier) {
    ///         completionHandler()
    ///     }
    ///     if !handled { completionHandler() }  // another library's session
    /// }
    /// ```
    ///
    /// - Returns: `false` when `identifier` is not this loader's background session
    ///   (``Configuration/Transport/background(_:discretionary:)``); `completionHandler`
    ///   is then not called.
    public nonisolated func handleEventsForBackgroundURLSession(
        _ identifier: String, completionHandler: @escaping @MainActor () -> Void
    ) -> Bool {
        guard let session = configuration.transport.backgroundSession, session.identifier == identifier else { return false }
        BackgroundEvents.store(identifier, completionHandler)
        // The session exists from here on: the system delivers its events to it.
        _ = configuration.transport.make(policy: configuration.network, dataDirectory: configuration.dataDirectory)
        return true
    }
}
