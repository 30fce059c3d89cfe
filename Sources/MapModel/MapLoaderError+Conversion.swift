import Foundation
import MapPlatform

/// An error of a layer below the loader that knows which ``MapLoaderError`` it is. Each
/// layer's own error type says so once, beside its definition (the platform's here, whose
/// module cannot see this one), and ``MapLoaderError/init(_:)`` is the one place that asks.
/// A call site with more context (which package, which step) still says it in its own
/// error; this is what an error means where nothing more is known.
package protocol MapLoaderErrorConvertible: Error {
    /// The error as an app sees it.
    var mapLoaderError: MapLoaderError { get }
}

extension MapLoaderError {
    /// Any error thrown inside an operation, as one of the closed taxonomy's: by the error's
    /// own word (``MapLoaderErrorConvertible``), or, for Foundation's file errors, by the
    /// path and `errno` they carry. Only an error of no known type becomes a storage failure
    /// without a path, its own words kept as the reason.
    package init(_ error: any Error) {
        switch error {
        case let error as MapLoaderError: self = error
        case is CancellationError: self = .cancelled
        case let error as any MapLoaderErrorConvertible: self = error.mapLoaderError
        case let error as CocoaError where error.filePath != nil: self = .storage(path: error.filePath ?? "", error)
        case let error as DecodingError: self = .invalidMetadata(what: "a metadata file", detail: "\(error)")
        default: self = .storageFailed(path: "", reason: "\(error)")
        }
    }
}

extension SystemError: MapLoaderErrorConvertible {
    /// A full file system, or the failed call's path and the system's reason.
    package var mapLoaderError: MapLoaderError { .storage(path: path, self) }
}

extension FileLock.Busy: MapLoaderErrorConvertible {
    /// Another process changes the data directory.
    package var mapLoaderError: MapLoaderError { .busy(pid: holder.map(Int.init)) }
}

extension FileTree.Problem: MapLoaderErrorConvertible {
    /// A folder of map files holds what no map tree holds (a link, a device) or cannot be read.
    package var mapLoaderError: MapLoaderError { .integrityFailed(what: "a folder of map files", detail: description) }
}

extension ZstdFrame.Failure: MapLoaderErrorConvertible {
    /// Compressed metadata that does not decompress within its limits.
    package var mapLoaderError: MapLoaderError { .invalidMetadata(what: "a compressed metadata file", detail: description) }
}

extension JSONProblem: MapLoaderErrorConvertible {
    /// Metadata that does not decode.
    package var mapLoaderError: MapLoaderError { .invalidMetadata(what: "a metadata file", detail: description) }
}

extension RootRefusal: MapLoaderErrorConvertible {
    /// A root of trust the chain's rules refuse.
    package var mapLoaderError: MapLoaderError { .signatureRefused("a root of trust is refused: \(description); nothing was changed") }
}
