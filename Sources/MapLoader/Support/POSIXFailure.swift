import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// The `errno` behind an error, read from its type, never from its message.
enum POSIXFailure {
    /// The `errno` an error carries, when it carries one.
    static func code(of error: any Error) -> Int32? {
        switch error {
        case let error as StorageError:
            return error.code
        case PatchError.io(_, _, let code):
            return code
        case let error as CocoaError:
            if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
                return Int32(underlying.code)
            }
            return error.code == .fileWriteOutOfSpace ? ENOSPC : nil
        default:
            let error = error as NSError
            return error.domain == NSPOSIXErrorDomain ? Int32(error.code) : nil
        }
    }

    /// Whether the error is a full file system: no blocks or inodes left (ENOSPC), or a
    /// quota reached (EDQUOT).
    static func isNoSpace(_ error: any Error) -> Bool {
        code(of: error).map { $0 == ENOSPC || $0 == EDQUOT } ?? false
    }
}

extension MapLoaderError {
    /// The error for a failed write or read of `path`: ``insufficientSpace(needed:available:path:)``
    /// when the file system is full, else ``storageFailed(path:reason:)`` with the system's reason.
    static func storage(path: String, _ error: any Error) -> MapLoaderError {
        if let error = error as? MapLoaderError { return error }
        if POSIXFailure.isNoSpace(error) {
            return .insufficientSpace(needed: 0, available: DiskSpace.available(at: URL(fileURLWithPath: path)) ?? 0, path: path)
        }
        return .storageFailed(path: path, reason: Store.reason(error))
    }
}
