import MapDelta
import MapPlatform

#if LZMA
    import CLzma
#endif

#if LZMA

    /// Writes the LZMA2 payloads ``LzmaDelta`` decodes: a file as one raw LZMA2 stream, with
    /// a prefix (the old file, or the references joined) preloaded in the dictionary.
    package enum LzmaEncoder {
        /// New files up to this size get the LZMA trial: the encoder runs at 1–3 MB/s.
        package static let trialLimit: Int64 = 4 << 20
        /// Prefixes up to this size: the encoder indexes all of it for each file.
        package static let prefixLimit = 8 << 20

        /// Whether a file of `newSize` bytes against `prefix` bytes gets the LZMA trial.
        package static func applies(newSize: Int64, prefix: Int) -> Bool {
            newSize > 0 && newSize <= trialLimit && prefix <= prefixLimit
                && LzmaDelta.dictionarySize(prefix: prefix, target: newSize) != nil
        }

        /// The LZMA preset for zstd level `level` (the publisher's time budget): 9, the deepest,
        /// from level 18 on (its cost on a tile is a few zstd encodes), about half the level
        /// below.
        package static func preset(forLevel level: Int) -> UInt32 {
            UInt32(min(9, max(1, level / 2)))
        }

        /// Encodes the `size` bytes of the file at `path` into `output` against `prefix` (nil:
        /// none) at `preset` (see ``preset(forLevel:)``) and returns the payload's length.
        /// Literal context of one bit, no position bits: map tiles and tables of binary numbers
        /// are not aligned text (sample-world deltas: 182.3 kB, against 190.2 kB with none and
        /// 185.0 kB with the default three).
        package static func encode(
            path: String, size: Int64, prefix: UnsafeRawBufferPointer?, preset: UInt32 = 9, into output: SystemFile
        ) throws -> Int64 {
            func fail(_ message: String) -> PatchBuildError { .codec(path: path, message: message) }
            guard let dictionary = LzmaDelta.dictionarySize(prefix: prefix?.count ?? 0, target: size) else {
                throw fail("over \(LzmaDelta.maxDictionary >> 20) MiB of old and new bytes for LZMA2")
            }
            var options = LzmaDelta.options(dictionary: dictionary, prefix: prefix, preset: preset)
            (options.lc, options.lp, options.pb) = (1, 0, 0)
            var stream = lzma_stream()
            let status = LzmaDelta.open(&stream, encoder: true, options: options)
            guard status == LZMA_OK else { throw fail(LzmaDelta.message(status)) }
            defer { lzma_end(&stream) }

            let input = try SystemFile.openForReading(path)
            let capacity = 1 << 20
            let inBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
            defer { inBuffer.deallocate() }
            let outBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
            defer { outBuffer.deallocate() }
            var read: Int64 = 0
            var written: Int64 = 0
            var ended = false
            while !ended {
                if stream.avail_in == 0, read < size {
                    let got = try input.readChunk(
                        into: UnsafeMutableRawBufferPointer(rebasing: inBuffer[0..<Int(min(Int64(capacity), size - read))]))
                    guard got > 0 else { throw PatchBuildError.fileChanged(path: path) }
                    read += Int64(got)
                    stream.next_in = UnsafePointer(inBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    stream.avail_in = got
                }
                stream.next_out = outBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
                stream.avail_out = capacity
                let result = lzma_code(&stream, read == size ? LZMA_FINISH : LZMA_RUN)
                let count = capacity - stream.avail_out
                if count > 0 {
                    try output.writeAll(UnsafeRawBufferPointer(rebasing: outBuffer[0..<count]))
                    written += Int64(count)
                }
                switch result {
                case LZMA_STREAM_END: ended = true
                case LZMA_OK: continue
                default: throw fail(LzmaDelta.message(result))
                }
            }
            return written
        }
    }
#else
    /// Without the trait LZMA this build makes no LZMA2 payloads: no trial applies.
    package enum LzmaEncoder {
        package static func applies(newSize: Int64, prefix: Int) -> Bool { false }
        package static func preset(forLevel level: Int) -> UInt32 { 0 }
        package static func encode(
            path: String, size: Int64, prefix: UnsafeRawBufferPointer?, preset: UInt32 = 9, into output: SystemFile
        ) throws -> Int64 {
            throw PatchBuildError.codec(path: path, message: "this build has no LZMA2 encoder (built without the trait LZMA)")
        }
    }
#endif
