import Foundation
import MapPublisher
import MapTestSupport
import Testing

/// The suffix index's search finds, at every position of the new bytes, the match a plain
/// binary search of the sorted suffixes finds (of the two suffixes either side of where
/// the new bytes sort, the longer match), and that match is a longest one.
@Suite struct SuffixIndexTests {
    /// The reference: a binary search of all the suffixes for the first one not before
    /// `new[from...]` (in the order of the suffixes themselves: one that ends first is
    /// before), then the longer match of it and the one before (the later on a tie).
    static func plainSearch(
        _ suffixes: [Int32], _ old: UnsafeBufferPointer<UInt8>, _ new: UnsafeBufferPointer<UInt8>, from: Int
    ) -> SuffixIndex.Match {
        func length(_ start: Int) -> Int { shared(old, start, new, from) }
        if suffixes.count == 1 { return .init(length: length(Int(suffixes[0])), position: Int(suffixes[0])) }
        var low = 0
        var high = suffixes.count
        while low < high {
            let middle = (low + high) / 2
            let start = Int(suffixes[middle])
            let shared = length(start)
            let before = from + shared < new.count && (start + shared == old.count || old[start + shared] < new[from + shared])
            if before { low = middle + 1 } else { high = middle }
        }
        let second = min(max(low, 1), suffixes.count - 1)
        let a = length(Int(suffixes[second - 1]))
        let b = length(Int(suffixes[second]))
        return a > b ? .init(length: a, position: Int(suffixes[second - 1])) : .init(length: b, position: Int(suffixes[second]))
    }

    /// Old and new bytes of one kind: random, long runs (a map image's background), a small
    /// alphabet that repeats (text, tiles of one pattern), numbers that shift, and edge sizes.
    static let cases: [(name: String, old: [UInt8], new: [UInt8])] = {
        var generator = SeededGenerator(seed: 5)
        func random(_ count: Int, below: UInt64 = 256) -> [UInt8] {
            (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next() % below) }
        }
        func runs(_ count: Int) -> [UInt8] {
            var bytes: [UInt8] = []
            while bytes.count < count {
                bytes += Array(repeating: [0, 255, 7][Int(generator.next() % 3)], count: Int(generator.next() % 300) + 1)
            }
            return Array(bytes.prefix(count))
        }
        let text = random(20_000, below: 4)
        var edited = text
        for index in stride(from: 100, to: edited.count, by: 997) { edited[index] = 9 }
        // Pieces of the old bytes spliced: past each seam a longer match starts elsewhere.
        let pieces = random(3_000, below: 3)
        var spliced: [UInt8] = []
        while spliced.count < 3_000 {
            let start = Int(generator.next() % 2_900)
            let count = Int(generator.next() % 60) + 3
            spliced += pieces[start..<min(pieces.count, start + count)]
        }
        let numbers = (0..<5_000).flatMap { withUnsafeBytes(of: Int32($0 * 37).littleEndian, Array.init) }
        let shifted = (0..<5_000).flatMap { withUnsafeBytes(of: Int32($0 * 37 + 5).littleEndian, Array.init) }
        return [
            ("random", random(2_000), random(2_000)),
            ("runs", runs(30_000), runs(30_000)),
            ("a small alphabet, edited", text, edited),
            ("numbers shifted", numbers, shifted),
            ("pieces spliced", pieces, spliced),
            ("one old byte", [7], [7, 7, 0, 7]),
            ("two old bytes", [0, 255], [255, 0, 255, 255]),
            ("old shorter than new", [1, 2, 3], Array(repeating: 2, count: 50) + [1, 2, 3, 4]),
            ("all equal", Array(repeating: 0, count: 5_000), Array(repeating: 0, count: 3_000)),
        ]
    }()

    @Test(arguments: cases.indices)
    func findsALongestMatchAsAPlainSearchDoes(_ index: Int) throws {
        let (name, oldBytes, newBytes) = Self.cases[index]
        try oldBytes.withUnsafeBufferPointer { old in
            try newBytes.withUnsafeBufferPointer { new in
                try SuffixIndex.with(old, path: name) { suffixIndex in
                    // The sorted order, read back: the index's search of each old suffix
                    // against the whole old file finds that suffix itself.
                    for position in 0..<old.count {
                        let match = suffixIndex.longestMatch(old, from: position)
                        #expect(match.length == old.count - position, "\(name): old position \(position)")
                    }
                    let suffixes = Self.sortedSuffixes(old)
                    for from in 0..<new.count {
                        let expected = Self.plainSearch(suffixes, old, new, from: from)
                        if old.count * new.count <= 4_000_000 {
                            #expect(expected.length == Self.longestLength(old, new, from: from), "\(name): position \(from) is a longest match")
                        }
                        #expect(suffixIndex.longestMatch(new, from: from) == expected, "\(name): position \(from)")
                    }
                }
            }
        }
    }

    /// The longest match of `new[from...]` anywhere in `old`, by trying every position.
    static func longestLength(_ old: UnsafeBufferPointer<UInt8>, _ new: UnsafeBufferPointer<UInt8>, from: Int) -> Int {
        (0..<old.count).map { shared(old, $0, new, from) }.max() ?? 0
    }

    /// How many bytes of `old[start...]` and `new[from...]` are equal, byte by byte.
    static func shared(_ old: UnsafeBufferPointer<UInt8>, _ start: Int, _ new: UnsafeBufferPointer<UInt8>, _ from: Int) -> Int {
        var count = 0
        while start + count < old.count, from + count < new.count, old[start + count] == new[from + count] { count += 1 }
        return count
    }

    /// The suffixes of `bytes` in sorted order, sorted here by comparison (the reference
    /// for the index's libdivsufsort order).
    static func sortedSuffixes(_ bytes: UnsafeBufferPointer<UInt8>) -> [Int32] {
        (0..<Int32(bytes.count)).sorted { a, b in
            let a = Int(a)
            let b = Int(b)
            let count = min(bytes.count - a, bytes.count - b)
            let order = memcmp(bytes.baseAddress! + a, bytes.baseAddress! + b, count)
            return order != 0 ? order < 0 : bytes.count - a < bytes.count - b
        }
    }
}
