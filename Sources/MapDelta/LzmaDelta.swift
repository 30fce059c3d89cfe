#if LZMA
    package import CLzma
    package import MapPlatform

    /// LZMA2 payloads (``PatchEncoding/lzma``, ``PatchEncoding/lzmaDelta``,
    /// ``PatchEncoding/lzmaCrossDelta``): one raw LZMA2 stream, no container, whose
    /// dictionary starts out holding the old bytes (liblzma's preset dictionary) where there
    /// are any. Its range coder models bits in context, where zstd's Huffman and FSE stages
    /// code whole symbols: on small map tiles of random geometry it is about a tenth smaller
    /// (new sample-world tiles against their group's largest old ones: 11.2 kB against zstd's
    /// 12.7 kB). Decoding runs at tens of MB/s, so the publisher tries it on small files only.
    ///
    /// The stream carries no sizes: both sides derive the dictionary size from the prefix and
    /// the target (``dictionarySize(prefix:target:)``), so a hostile payload cannot make the
    /// client allocate more than ``maxDictionary``.
    package enum LzmaDelta {
        /// The largest prefix plus file an LZMA payload may span: the most dictionary memory a
        /// client allocates for one.
        package static let maxDictionary: Int64 = 48 << 20

        /// The dictionary size of a payload whose prefix is `prefix` bytes and whose file is
        /// `target` bytes: all of both (at least liblzma's minimum), or nil above
        /// ``maxDictionary``.
        package static func dictionarySize(prefix: Int, target: Int64) -> UInt32? {
            let total = Int64(prefix) + target
            guard prefix >= 0, target >= 0, total <= maxDictionary else { return nil }
            return UInt32(max(Int64(ml_lzma_dict_size_min), total))
        }

        /// The LZMA options both sides use: `dictionary` bytes of dictionary preloaded with
        /// `prefix`, the search of `preset` (0–9; the decoder's does not matter). The publisher
        /// sets the literal-context bits; the decoder reads them from the stream.
        package static func options(dictionary: UInt32, prefix: UnsafeRawBufferPointer?, preset: UInt32 = 9) -> lzma_options_lzma {
            var options = lzma_options_lzma()
            _ = lzma_lzma_preset(&options, min(preset, 9))
            options.dict_size = dictionary
            if let prefix, prefix.count > 0 {
                options.preset_dict = prefix.baseAddress!.assumingMemoryBound(to: UInt8.self)
                options.preset_dict_size = UInt32(prefix.count)
            }
            return options
        }

        /// Opens `stream` as a raw LZMA2 encoder or decoder with `options` (both sides use this
        /// one filter chain).
        package static func open(_ stream: inout lzma_stream, encoder: Bool, options: lzma_options_lzma) -> lzma_ret {
            var options = options
            return withUnsafeMutablePointer(to: &options) { pointer in
                var filters = [
                    lzma_filter(id: ml_lzma_filter_lzma2, options: UnsafeMutableRawPointer(pointer)),
                    lzma_filter(id: ml_lzma_vli_unknown, options: nil),
                ]
                return encoder ? lzma_raw_encoder(&stream, &filters) : lzma_raw_decoder(&stream, &filters)
            }
        }

        /// A readable message for an liblzma status.
        package static func message(_ status: lzma_ret) -> String {
            switch status {
            case LZMA_MEM_ERROR: return "out of memory"
            case LZMA_MEMLIMIT_ERROR: return "memory limit reached"
            case LZMA_FORMAT_ERROR, LZMA_DATA_ERROR: return "corrupt LZMA2 data"
            case LZMA_OPTIONS_ERROR: return "unsupported LZMA2 options"
            case LZMA_BUF_ERROR: return "LZMA2 data ends early"
            default: return "liblzma error \(status.rawValue)"
            }
        }

        /// Decodes the LZMA2 stream at `offset..<offset+length` of `input`, with `prefix` (nil
        /// or empty: none) in its dictionary, handing the output to `output` in chunks. The
        /// output must be exactly `expectedSize` bytes and the stream must end exactly at the
        /// payload's end; anything else throws.
        package static func decode(
            from input: SystemFile, offset: Int64, length: Int64, prefix: UnsafeRawBufferPointer?,
            expectedSize: Int64, displayPath: String, output: (UnsafeRawBufferPointer) throws -> Void
        ) throws {
            func fail(_ message: String) -> PatchError { .codec(path: displayPath, message: message) }
            guard let dictionary = dictionarySize(prefix: prefix?.count ?? 0, target: expectedSize) else {
                throw fail("an LZMA2 payload over \(maxDictionary >> 20) MiB of old and new bytes")
            }
            var stream = lzma_stream()
            let status = open(&stream, encoder: false, options: options(dictionary: dictionary, prefix: prefix))
            guard status == LZMA_OK else { throw fail(message(status)) }
            defer { lzma_end(&stream) }

            let inCapacity = 64 << 10
            let outCapacity = 1 << 20
            let inBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: inCapacity, alignment: 16)
            defer { inBuffer.deallocate() }
            let outBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: outCapacity, alignment: 16)
            defer { outBuffer.deallocate() }
            var consumed: Int64 = 0
            var produced: Int64 = 0
            var ended = false
            while !ended {
                if stream.avail_in == 0, consumed < length {
                    let want = Int(min(Int64(inCapacity), length - consumed))
                    let got = try input.readChunk(into: UnsafeMutableRawBufferPointer(rebasing: inBuffer[0..<want]), at: offset + consumed)
                    guard got == want else {
                        throw PatchError.truncated(detail: "payload for \(displayPath) ends after \(consumed + Int64(got)) of \(length) bytes")
                    }
                    consumed += Int64(got)
                    stream.next_in = UnsafePointer(inBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    stream.avail_in = got
                }
                let finishing = consumed == length
                stream.next_out = outBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
                stream.avail_out = outCapacity
                let result = lzma_code(&stream, finishing ? LZMA_FINISH : LZMA_RUN)
                let count = outCapacity - stream.avail_out
                if count > 0 {
                    produced += Int64(count)
                    guard produced <= expectedSize else { throw fail("decodes to more than the \(expectedSize) bytes of the file") }
                    try output(UnsafeRawBufferPointer(rebasing: outBuffer[0..<count]))
                }
                switch result {
                case LZMA_STREAM_END:
                    ended = true
                case LZMA_OK:
                    // No progress with all input given: the stream ends early.
                    if finishing, stream.avail_in == 0, count == 0 { throw fail(message(LZMA_BUF_ERROR)) }
                default:
                    throw fail(message(result))
                }
            }
            guard stream.avail_in == 0, consumed == length else { throw fail("data after the end of the LZMA2 stream") }
            guard produced == expectedSize else { throw fail("decodes to \(produced) bytes, the file has \(expectedSize)") }
        }
    }
#endif
