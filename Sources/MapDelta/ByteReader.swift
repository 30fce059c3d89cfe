import MapModel
package import MapPlatform

/// A bounds-checked cursor over decoded manifest bytes; every read that would run past
/// the end throws ``PatchError/corrupt(detail:)`` instead of trapping.
package struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset = 0

    /// A reader at the start of `bytes`.
    package init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Bytes left to read.
    package var remaining: Int { bytes.count - offset }

    /// One byte.
    package mutating func byte() throws -> UInt8 {
        guard offset < bytes.count else { throw PatchError.corrupt(detail: "manifest ends early") }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// An unsigned LEB128 varint of at most 10 bytes that fits in `Int64`.
    package mutating func varint() throws -> Int64 { try Self.varint(next: { try byte() }) }

    /// One LEB128 varint of at most `Int64.max`, its bytes from `next` (a manifest's bytes,
    /// or a stream's).
    package static func varint(next: () throws -> UInt8) throws -> Int64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try next()
            if shift == 63 && b > 1 { throw PatchError.corrupt(detail: "varint overflows") }
            value |= UInt64(b & 0x7f) << shift
            if b & 0x80 == 0 { break }
            shift += 7
            if shift > 63 { throw PatchError.corrupt(detail: "varint too long") }
        }
        guard value <= UInt64(Int64.max) else { throw PatchError.corrupt(detail: "value out of range") }
        return Int64(value)
    }

    /// A count of entries that each take at least `minimumEntrySize` bytes, so a corrupt
    /// count can never make the caller reserve more than the manifest could hold.
    package mutating func count(minimumEntrySize: Int) throws -> Int {
        let n = try varint()
        guard n <= Int64(remaining / max(minimumEntrySize, 1)) else {
            throw PatchError.corrupt(detail: "entry count \(n) exceeds manifest size")
        }
        return Int(n)
    }

    /// An index below `limit`.
    package mutating func index(below limit: Int) throws -> Int {
        let n = try varint()
        guard n < Int64(limit) else { throw PatchError.corrupt(detail: "index \(n) out of range") }
        return Int(n)
    }

    /// `count` raw bytes.
    package mutating func bytes(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, count <= remaining else { throw PatchError.corrupt(detail: "manifest ends early") }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    /// A varint-length UTF-8 string.
    package mutating func string() throws -> String {
        let length = try varint()
        guard length <= Int64(remaining) else { throw PatchError.corrupt(detail: "string runs past manifest end") }
        guard let s = String(validating: try bytes(Int(length)), as: UTF8.self) else {
            throw PatchError.corrupt(detail: "path is not UTF-8")
        }
        return s
    }

    /// A 32-byte SHA-256.
    package mutating func sha256() throws -> SHA256Hash {
        SHA256Hash(bytes: try bytes(32))!
    }

    /// A little-endian unsigned integer of `T`'s width.
    package mutating func little<T: FixedWidthInteger & UnsignedInteger>(_: T.Type = T.self) throws -> T {
        let raw = try bytes(MemoryLayout<T>.size)
        return raw.reversed().reduce(T(0)) { $0 << 8 | T($1) }
    }

    /// A little-endian u32.
    package mutating func u32() throws -> UInt32 { try little() }

    /// A little-endian u64.
    package mutating func u64() throws -> UInt64 { try little() }

    /// A little-endian u64 that must fit a non-negative Int64 (a length or an offset).
    package mutating func length() throws -> Int64 {
        let value = try u64()
        guard value <= UInt64(Int64.max) else { throw PatchError.corrupt(detail: "a length is out of range") }
        return Int64(value)
    }
}

extension ByteReader {
    /// Appends `value` as an unsigned LEB128 varint (what ``varint()`` reads).
    package static func appendVarint(_ value: UInt64, to out: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            out.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        out.append(UInt8(value))
    }
}
