/// Why `ManifestServer.start()` failed.
package enum ManifestServerError: Error, Sendable, Equatable {
    /// `start()` was called on a server that is running or already stopped.
    case alreadyStarted
    /// The root folder does not exist or is not a directory.
    case rootNotDirectory(String)
    /// The host name could not be resolved to a local address.
    case addressResolution(host: String, message: String)
    /// A socket call failed; `errno` is the POSIX error number.
    case socket(operation: String, errno: Int32)
}
