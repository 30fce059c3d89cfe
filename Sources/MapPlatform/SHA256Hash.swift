package import Crypto
import Foundation

/// A SHA-256 digest: 32 bytes, shown as 64 lowercase hex digits.
package struct SHA256Hash: Hashable, Sendable, CustomStringConvertible {
    /// The 32 digest bytes.
    package let bytes: [UInt8]

    /// A digest from exactly 32 bytes; nil for any other length.
    package init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        self.bytes = Array(bytes)
    }

    /// A digest from 64 hex digits (either case); nil for anything else.
    package init?(hex: String) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 64 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(32)
        for i in stride(from: 0, to: 64, by: 2) {
            guard let high = Self.nibble(utf8[i]), let low = Self.nibble(utf8[i + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        bytes = out
    }

    /// The digest of a finished hasher.
    package init(_ digest: SHA256.Digest) {
        bytes = Array(digest)
    }

    /// The digest as 64 lowercase hex digits.
    package var hex: String { Self.hex(bytes) }

    /// Any bytes as lowercase hex digits.
    package static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The hex form.
    package var description: String { hex }

    /// The SHA-256 of the bytes in `buffer`.
    package static func of(_ buffer: UnsafeRawBufferPointer) -> SHA256Hash {
        SHA256Hash(SHA256.hash(data: buffer))
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
