import Foundation

/// The entries of a tar stream (POSIX ustar, with pax extended headers and GNU long names),
/// read one 512-byte block at a time from an ``ArchiveStream``: only what a map archive
/// holds is understood, and everything a header says is checked before it is used (the
/// checksum, octal or base-256 sizes within `Int64`, the pax records' lengths, the names'
/// UTF-8). What is not a file or a folder reads as ``Entry/Kind/other(_:)`` for the caller
/// to refuse by name.
struct TarReader {
    /// One entry's header.
    struct Entry {
        enum Kind: Equatable {
            case file
            case folder
            case hardLink
            /// Sparse files (GNU or pax), which map archives may not be.
            case sparse
            /// A symbolic link, device, FIFO or any other type (its type byte).
            case other(UInt8)
        }

        /// The path as the archive names it.
        var name: String
        var kind: Kind
        /// Bytes of data that follow the header.
        var size: Int64
    }

    private let stream: ArchiveStream
    /// Data of the current entry not yet read, and the padding after it.
    private var remaining: Int64 = 0
    private var padding: Int64 = 0
    /// The largest pax or GNU long-name record read into memory.
    static let maxExtendedHeader: Int64 = 1 << 20

    init(_ stream: ArchiveStream) { self.stream = stream }

    private static func corrupt(_ detail: String) -> ArchiveExtractor.Refusal {
        ArchiveExtractor.Refusal(description: "corrupt archive (\(detail))")
    }

    /// The next entry, its data unread; nil at the end of the archive (a zero block).
    mutating func next() throws -> Entry? {
        // Apart: a hostile size near `Int64.max` plus its padding would overflow.
        try skip(remaining)
        try skip(padding)
        (remaining, padding) = (0, 0)
        var longName: String?
        var pax: [String: String] = [:]
        while true {
            var block = [UInt8](repeating: 0, count: 512)
            guard try readExactly(&block) else {
                throw Self.corrupt("it ends without the two zero blocks that close a tar stream")
            }
            if block.allSatisfy({ $0 == 0 }) { return nil }
            let header = try Header(block)
            switch header.type {
            case UInt8(ascii: "x"), UInt8(ascii: "L"):
                guard header.size <= Self.maxExtendedHeader else {
                    throw Self.corrupt("an extended header of \(header.size) bytes, over the \(Self.maxExtendedHeader) this reader takes")
                }
                var record = [UInt8](repeating: 0, count: Int(header.size))
                guard try readExactly(&record) else { throw Self.corrupt("it ends inside an extended header") }
                try skip(Self.padding(of: header.size))
                if header.type == UInt8(ascii: "L") {
                    longName = try Self.string(record.prefix { $0 != 0 })
                } else {
                    pax.merge(try Self.paxRecords(record)) { $1 }
                }
                continue
            case UInt8(ascii: "g"):
                // Global defaults: nothing a map archive needs.
                try skip(header.size)
                try skip(Self.padding(of: header.size))
                continue
            default:
                break
            }
            var entry = Entry(name: try pax["path"] ?? longName ?? header.name(), kind: header.kind, size: header.size)
            if let size = pax["size"] {
                guard let value = Int64(size), value >= 0 else { throw Self.corrupt("a pax size '\(size)'") }
                entry.size = value
            }
            if pax.keys.contains(where: { $0.hasPrefix("GNU.sparse.") }) { entry.kind = .sparse }
            // Links, folders and the rest carry no data in a map archive's tar.
            let data = entry.kind == .file || entry.kind == .sparse || entry.kind.isOther ? entry.size : 0
            (remaining, padding) = (data, Self.padding(of: data))
            return entry
        }
    }

    /// Reads the current entry's data into `buffer`; 0 once it is all read.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard remaining > 0 else { return 0 }
        let wanted = Int(min(Int64(buffer.count), remaining))
        let count = try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted]))
        guard count > 0 else { throw Self.corrupt("it ends inside an entry's data") }
        remaining -= Int64(count)
        return count
    }

    private static func padding(of size: Int64) -> Int64 { (512 - size % 512) % 512 }

    /// Reads `bytes.count` bytes; false where the stream ends first (at its very start only).
    private func readExactly(_ bytes: inout [UInt8]) throws -> Bool {
        var filled = 0
        while filled < bytes.count {
            let count = try bytes.withUnsafeMutableBytes { try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...])) }
            if count == 0 {
                if filled == 0 { return false }
                throw Self.corrupt("it ends inside a block")
            }
            filled += count
        }
        return true
    }

    /// Reads and drops `count` bytes.
    private func skip(_ count: Int64) throws {
        var left = count
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { scratch.deallocate() }
        while left > 0 {
            let read = try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: scratch[0..<Int(min(Int64(scratch.count), left))]))
            guard read > 0 else { throw Self.corrupt("it ends inside an entry's data") }
            left -= Int64(read)
        }
    }

    private static func string<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ArchiveExtractor.Refusal(description: "an entry's name is not valid UTF-8")
        }
        return text
    }

    /// A pax extended header's records: "<length> <key>=<value>\n", each length counting
    /// the whole record.
    private static func paxRecords(_ bytes: [UInt8]) throws -> [String: String] {
        var records: [String: String] = [:]
        var start = 0
        while start < bytes.count {
            guard let space = bytes[start...].firstIndex(of: UInt8(ascii: " ")),
                let length = Int(String(decoding: bytes[start..<space], as: UTF8.self)), length > space - start + 1,
                length <= bytes.count - start, bytes[start + length - 1] == UInt8(ascii: "\n"),
                let equals = bytes[(space + 1)..<(start + length)].firstIndex(of: UInt8(ascii: "="))
            else { throw corrupt("a malformed pax record") }
            let key = try string(bytes[(space + 1)..<equals])
            records[key] = try string(bytes[(equals + 1)..<(start + length - 1)])
            start += length
        }
        return records
    }
}

extension TarReader.Entry.Kind {
    fileprivate var isOther: Bool { if case .other = self { true } else { false } }
}

/// One 512-byte ustar (or GNU, or v7) header, its checksum checked.
private struct Header {
    let block: [UInt8]
    let type: UInt8
    let size: Int64

    init(_ block: [UInt8]) throws {
        self.block = block
        let stored = try Header.number(block[148..<156], field: "checksum")
        let sum = block.enumerated().reduce(Int64(0)) { $0 + Int64((148..<156).contains($1.offset) ? 32 : $1.element) }
        guard stored == sum else { throw ArchiveExtractor.Refusal(description: "corrupt archive (a header's checksum does not match)") }
        type = block[156]
        size = try Header.number(block[124..<136], field: "size")
    }

    var kind: TarReader.Entry.Kind {
        switch type {
        case UInt8(ascii: "0"), 0, UInt8(ascii: "7"): .file
        case UInt8(ascii: "5"): .folder
        case UInt8(ascii: "1"): .hardLink
        case UInt8(ascii: "S"): .sparse
        default: .other(type)
        }
    }

    /// The name, with the ustar prefix where the header has one.
    func name() throws -> String {
        let name = block[0..<100].prefix { $0 != 0 }
        let ustar = block[257..<262].elementsEqual("ustar".utf8)
        let prefix = ustar ? block[345..<500].prefix { $0 != 0 } : []
        guard let text = String(validating: prefix.isEmpty ? Array(name) : Array(prefix) + [UInt8(ascii: "/")] + name, as: UTF8.self)
        else { throw ArchiveExtractor.Refusal(description: "an entry's name is not valid UTF-8") }
        return text
    }

    /// An octal field (NUL- or space-terminated, leading spaces allowed), or GNU's base-256
    /// (high bit set); at most `Int64.max`, never negative.
    static func number(_ field: ArraySlice<UInt8>, field name: String) throws -> Int64 {
        let refused = ArchiveExtractor.Refusal(description: "corrupt archive (a header's \(name) field)")
        if let first = field.first, first & 0x80 != 0 {
            guard first == 0x80 else { throw refused }  // negative or beyond 2^64
            var value: Int64 = 0
            for byte in field.dropFirst() {
                guard value <= (Int64.max >> 8) else { throw refused }
                value = value << 8 | Int64(byte)
            }
            return value
        }
        var value: Int64 = 0
        for byte in field.drop(while: { $0 == UInt8(ascii: " ") }) {
            if byte == 0 || byte == UInt8(ascii: " ") { break }
            guard (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(byte), value <= (Int64.max >> 3) else { throw refused }
            value = value << 3 | Int64(byte - UInt8(ascii: "0"))
        }
        return value
    }
}
