import Crypto
import MapPlatform

/// A streaming SHA-256 producing ``SHA256Hash``.
struct SHA256Hasher {
    private var hasher = SHA256()

    mutating func update(_ chunk: UnsafeRawBufferPointer) { hasher.update(bufferPointer: chunk) }

    func finalize() -> SHA256Hash { SHA256Hash(hasher.finalize()) }
}
