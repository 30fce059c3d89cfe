import Foundation
import MapPlatform
import Synchronization

extension DeflatePieces {
    /// Joins pieces of a bit stream (deflate's: least significant bit first) whose lengths
    /// need not be whole bytes, handing the joined bytes on as they fill.
    struct BitJoiner {
        /// Bits joined so far.
        private(set) var bits: Int64 = 0
        /// The low ``carryBits`` bits of the byte not yet full.
        private var carry: UInt8 = 0
        private var carryBits = 0

        /// Joins the first `count` bits of `bytes`.
        mutating func append(_ bytes: UnsafeRawBufferPointer, bits count: Int64, to output: (UnsafeRawBufferPointer) throws -> Void) throws {
            guard count >= 0, count <= Int64(bytes.count) * 8 else {
                throw PatchError.corrupt(detail: "a deflate piece is shorter than its bits")
            }
            let full = Int(count / 8)
            let rest = Int(count % 8)
            bits += count
            if carryBits == 0 {
                try output(UnsafeRawBufferPointer(rebasing: bytes[0..<full]))
                if rest > 0 { (carry, carryBits) = (bytes[full] & UInt8((1 << rest) - 1), rest) }
                return
            }
            var joined = [UInt8](repeating: 0, count: full + 1)
            for index in 0..<full {
                let byte = bytes[index]
                joined[index] = carry | byte << carryBits
                carry = byte >> (8 - carryBits)
            }
            var count = full
            if rest > 0 {
                let combined = UInt16(carry) | UInt16(bytes[full] & UInt8((1 << rest) - 1)) << carryBits
                if carryBits + rest >= 8 {
                    joined[count] = UInt8(truncatingIfNeeded: combined)
                    count += 1
                    (carry, carryBits) = (UInt8(truncatingIfNeeded: combined >> 8), carryBits + rest - 8)
                } else {
                    (carry, carryBits) = (UInt8(truncatingIfNeeded: combined), carryBits + rest)
                }
            }
            try joined.withUnsafeBytes { try output(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        }

        /// Hands on the last byte, its unused high bits zero.
        mutating func finish(to output: (UnsafeRawBufferPointer) throws -> Void) throws {
            guard carryBits > 0 else { return }
            try withUnsafeBytes(of: carry) { try output($0) }
            carryBits = 0
        }
    }

    /// The publisher's proof that pieces make an original stream again bit for bit.
    struct Proof: Sendable {
        /// A piece: its content range and the bits of the original it must make.
        struct Piece: Sendable {
            var content: Range<Int64>
            var bits: Range<Int64>
        }

        /// The file holding the original compressed stream, and where the stream starts.
        let file: SystemFile
        let stream: Int64
        let expansion: SystemFile
        /// Where the stream's content starts in the expansion, and its length.
        let base: Int64
        let length: Int64

        /// Whether `piece` deflated with `parameters` makes its bits of the original; stops
        /// at the first byte that differs.
        func holds(_ piece: Piece, _ parameters: DeflateParameters) -> Bool {
            let wanted = piece.bits.count
            let last = piece.content.upperBound == length
            var produced: Int64 = 0
            let first = piece.bits.lowerBound >> 3
            guard let original = try? DeflateStreams.read(file, at: stream + first, count: Int((piece.bits.upperBound + 7) >> 3 - first))
            else { return false }
            do {
                let bits = try DeflatePieces.deflate(piece.content, ofStreamAt: base, length: length, in: expansion, parameters: parameters) {
                    for byte in $0 {
                        let at = produced * 8
                        produced += 1
                        guard at < Int64(wanted) else { continue }
                        let expected = Self.bits(of: original, from: piece.bits.lowerBound - first * 8 + at)
                        let mask = wanted - Int(at) >= 8 ? 0xFF : UInt8((1 << (wanted - Int(at))) - 1)
                        guard byte & mask == expected & mask else { throw Mismatch() }
                    }
                }
                guard last else { return bits == Int64(wanted) }
                // The last piece pads its own last byte, the original the stream's: the bits
                // the piece lacks must be the original's zero padding.
                guard abs(Int64(wanted) - bits) < 8 else { return false }
                return (min(bits, Int64(wanted))..<Int64(wanted)).allSatisfy {
                    Self.bits(of: original, from: piece.bits.lowerBound - first * 8 + $0) & 1 == 0
                }
            } catch {
                return false
            }
        }

        /// The indices of `pieces` that do not hold, each proved on one of up to `threads`
        /// threads.
        func failing(_ pieces: [Piece], _ parameters: DeflateParameters, threads: Int) -> [Int] {
            let failed = Mutex<[Int]>([])
            let next = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: max(1, min(threads, pieces.count))) { _ in
                while true {
                    let index = next.add(1, ordering: .relaxed).oldValue
                    guard index < pieces.count else { return }
                    if !holds(pieces[index], parameters) { failed.withLock { $0.append(index) } }
                }
            }
            return failed.withLock { $0 }.sorted()
        }

        /// The 8 bits of `original` from bit `bit` on (zero past its end).
        private static func bits(of original: [UInt8], from bit: Int64) -> UInt8 {
            let index = Int(bit >> 3)
            let shift = Int(bit & 7)
            let low = index < original.count ? original[index] >> shift : 0
            let high = shift > 0 && index + 1 < original.count ? original[index + 1] << (8 - shift) : 0
            return low | high
        }

        private struct Mismatch: Error {}
    }
}
