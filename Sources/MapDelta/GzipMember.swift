import Foundation

/// gzip member headers (RFC 1952), which ``DeflateStreams`` steps over.
package enum GzipMember {
    /// The length of the gzip header at the start of `bytes`, or `nil` when it is not a
    /// complete, well-formed header.
    static func headerLength(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 10, bytes[0] == 0x1F, bytes[1] == 0x8B, bytes[2] == 8, bytes[3] & 0xE0 == 0 else { return nil }
        let flags = bytes[3]
        var index = 10
        if flags & 0x04 != 0 {  // FEXTRA
            guard bytes.count >= index + 2 else { return nil }
            index += 2 + (Int(bytes[index]) | Int(bytes[index + 1]) << 8)
        }
        for flag: UInt8 in [0x08, 0x10] where flags & flag != 0 {  // FNAME, FCOMMENT: zero-terminated
            guard let end = bytes[min(index, bytes.count)...].firstIndex(of: 0) else { return nil }
            index = end + 1
        }
        if flags & 0x02 != 0 { index += 2 }  // FHCRC
        return index <= bytes.count ? index : nil
    }
}
