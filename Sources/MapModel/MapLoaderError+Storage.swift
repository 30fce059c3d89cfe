import Foundation
import MapPlatform
import SystemPackage

extension MapLoaderError {
    /// The error for a failed write or read of `path`: ``insufficientSpace(needed:available:path:)``
    /// when the file system is full (no blocks or inodes left, or a quota reached), else
    /// ``storageFailed(path:reason:)`` with the system's reason. Decided by the error's
    /// type and `errno`, never by its text.
    package static func storage(path: String, _ error: any Error) -> MapLoaderError {
        if let error = error as? MapLoaderError { return error }
        let code = Self.errno(of: error)
        if code == .noSpace || code == .diskQuotaExceeded {
            return .insufficientSpace(needed: 0, available: FileSystem.availableSpace(at: path) ?? 0, path: path)
        }
        if let code { return .storageFailed(path: path, reason: code.description) }
        return .storageFailed(path: path, reason: (error as NSError).localizedDescription)
    }

    /// Whether `error` is a full file system: no blocks or inodes left, or a quota reached.
    package static func isNoSpace(_ error: any Error) -> Bool {
        let code = errno(of: error)
        return code == .noSpace || code == .diskQuotaExceeded
    }

    /// The `errno` an error carries, read from its type: ours, or Foundation's POSIX errors.
    private static func errno(of error: any Error) -> Errno? {
        switch error {
        case let error as SystemError:
            return error.errno
        case let error as CocoaError:
            // Read as `any Error` first: on Linux the userInfo value does not cast to NSError.
            if let underlying = (error.userInfo[NSUnderlyingErrorKey] as? any Error).map({ $0 as NSError }),
                underlying.domain == NSPOSIXErrorDomain
            {
                return Errno(rawValue: Int32(underlying.code))
            }
            return error.code == .fileWriteOutOfSpace ? .noSpace : nil
        default:
            let error = error as NSError
            return error.domain == NSPOSIXErrorDomain ? Errno(rawValue: Int32(error.code)) : nil
        }
    }
}
