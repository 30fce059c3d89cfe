import MapDelta
import Testing

/// The one table of wire values and their parts (``PatchEncoding/parts``): every fact a
/// client or publisher reads off an encoding is derived from it, so a row written wrong
/// shows here as the fact the wire format has always had, written out by wire byte.
@Suite struct EncodingPartsTests {
    /// Each wire value is one combination of parts, and the combination names it back.
    @Test func eachWireValueIsOneCombinationOfParts() {
        var seen: [EncodingParts: PatchEncoding] = [:]
        for encoding in PatchEncoding.allCases {
            #expect(seen[encoding.parts] == nil, "\(encoding) and \(seen[encoding.parts]!) are both \(encoding.parts)")
            seen[encoding.parts] = encoding
            #expect(PatchEncoding(parts: encoding.parts) == encoding)
        }
        #expect(PatchEncoding(parts: EncodingParts(.scannedDeflate, .segmented, .suffix(.expansion), .old)) == nil)
    }

    /// The facts of each wire value, as clients of every earlier version read them.
    @Test(arguments: PatchEncoding.allCases) func theFactsOfEachWireValue(_ encoding: PatchEncoding) {
        let raw = encoding.rawValue
        let seeThrough: Set<UInt8> = [3, 7, 8, 9, 10, 11, 14, 15, 16, 22, 23, 24]
        let streamsWhole: Set<UInt8> = [0, 1, 2, 5, 6, 13, 17, 18, 19, 21]
        let notDelta: Set<UInt8> = [0, 1, 17]
        let lzma: Set<UInt8> = [17, 18, 19]
        let zstdFrames: Set<UInt8> = [22, 23, 24]
        let newFiles: Set<UInt8> = [0, 1, 3, 9, 17]
        let suffixForms: [UInt8: SuffixDelta.Form] = [6: .plain, 13: .filtered, 21: .sparse]
        #expect(encoding.parts.view.seesThrough == seeThrough.contains(raw))
        #expect(encoding.streamsWhole == streamsWhole.contains(raw))
        #expect(encoding.isDelta == !notDelta.contains(raw))
        #expect((encoding.optionalCodec == PatchCodecs.lzma) == lzma.contains(raw))
        #expect((encoding.optionalCodec == PatchCodecs.zstdFrames) == zstdFrames.contains(raw))
        #expect(encoding.parts.sendsNewFiles == newFiles.contains(raw))
        #expect(encoding.suffixForm == suffixForms[raw])
    }

    /// A see-through encoding by its parts, as the publisher names the one it made.
    @Test func seeThroughEncodingsByTheirParts() {
        let views: [(EncodingParts.View, whole: PatchEncoding, segmented: PatchEncoding, suffix: PatchEncoding)] = [
            (.deflate, .deflateDelta, .segmentedDeflateDelta, .suffixDeflateDelta),
            (.scannedDeflate, .scannedDeflateDelta, .segmentedScannedDeflateDelta, .suffixScannedDeflateDelta),
            (.gatheredDeflate, .gatheredDeflateDelta, .segmentedGatheredDeflateDelta, .suffixGatheredDeflateDelta),
            (.scannedZstd, .scannedZstdDelta, .segmentedScannedZstdDelta, .suffixScannedZstdDelta),
        ]
        for (view, whole, segmented, suffix) in views {
            #expect(PatchEncoding(seeThrough: view, layout: .whole, suffix: false) == whole)
            #expect(PatchEncoding(seeThrough: view, layout: .segmented, suffix: false) == segmented)
            #expect(PatchEncoding(seeThrough: view, layout: .whole, suffix: true) == suffix)
            #expect(PatchEncoding(seeThrough: view, layout: .segmented, suffix: true) == suffix)
            #expect(view.scans == (view != .deflate))
            #expect(view.gathers == (view == .gatheredDeflate))
        }
    }
}
