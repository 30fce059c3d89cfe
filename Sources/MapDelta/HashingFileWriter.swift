import Crypto
import Foundation
import MapModel
package import MapPlatform
import Synchronization

/// Writes one new file in chunks, hashing exactly the bytes it writes, and refuses to
/// grow past the size the target declares, so a damaged payload cannot fill the disk.
///
/// With `writeBehind`, a second thread hashes and writes while the caller decodes the
/// next bytes (``WriteBehind``): on a 58 MB file, hashing and the `write` calls are about
/// half of the work beside decoding. A failed write is then reported by the next
/// ``write(_:)`` or by ``finish()``.
package final class HashingFileWriter {
    private let file: SystemFile
    private let displayPath: String
    private let limit: Int64
    private var hasher = SHA256()
    private let behind: WriteBehind?
    /// Bytes written so far.
    private(set) var written: Int64 = 0

    /// Creates `path` (which must not exist) for a target of at most `limit` bytes;
    /// `writeBehind` hands hashing and writing to a second thread.
    package init(path: String, displayPath: String, limit: Int64, writeBehind: Bool = false) throws {
        file = try SystemFile.create(path)
        self.displayPath = displayPath
        self.limit = limit
        behind = writeBehind ? WriteBehind(file) : nil
    }

    deinit { behind?.end() }

    /// Appends `chunk`.
    package func write(_ chunk: UnsafeRawBufferPointer) throws {
        guard Int64(chunk.count) <= limit - written else {
            throw PatchError.corrupt(detail: "payload for \(displayPath) is longer than the target's \(limit) bytes")
        }
        if let behind {
            try behind.write(chunk)
        } else {
            try file.writeAll(chunk)
            hasher.update(bufferPointer: chunk)
        }
        written += Int64(chunk.count)
    }

    /// fsyncs the file (unless `sync` is false: the caller flushes the file system later)
    /// and returns the SHA-256 of the bytes written and the file's size on disk as `fstat`
    /// reports it.
    package func finish(sync: Bool = true) throws -> (sha256: SHA256Hash, size: Int64) {
        let digest = try behind?.finish() ?? SHA256Hash(hasher.finalize())
        if sync { try file.sync() }
        return (digest, try file.size())
    }
}

/// The second thread of a ``HashingFileWriter``: a ring of buffers the caller fills and
/// the thread hashes and writes, in order.
///
/// `@unchecked Sendable`, and why that is safe: `file`, `buffers`, `counts` and `hasher` are
/// shared by the two threads, but every buffer slot and its count belong to one side at a
/// time (`counts` is raw memory, so writing one element touches no other). The caller
/// fills slot `i` only after `free` let it in (the thread is done with it) and hands it
/// over with `filled`; the thread reads it only after `filled` and gives it back with
/// `free`. `hasher` and the file's writes belong to the thread until `done` is signalled,
/// after which only the caller reads the digest. Semaphores order the memory accesses on
/// both sides of each hand-over. The first error is kept under a `Mutex`.
final class WriteBehind: @unchecked Sendable {
    /// Buffers in the ring, and bytes per buffer.
    static let slots = 4
    static let slotBytes = 1 << 20

    private let file: SystemFile
    private let buffers: [UnsafeMutableRawBufferPointer]
    /// Bytes in each filled slot; -1 ends the stream. Raw memory, not an array: an array
    /// element's write goes through the whole array, which the thread reads meanwhile.
    private let counts = UnsafeMutableBufferPointer<Int>.allocate(capacity: slots)
    private var hasher = SHA256()
    /// Created at 0 and signalled once per slot the thread may fill: libdispatch traps when
    /// a semaphore is freed below the value it was created with.
    private let free = DispatchSemaphore(value: 0)
    private let filled = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let failure = Mutex<(any Error)?>(nil)
    /// The caller's side: the slot it fills and how much of it is used.
    private var head = 0
    private var used = 0
    private var ended = false

    init(_ file: SystemFile) {
        self.file = file
        buffers = (0..<Self.slots).map { _ in .allocate(byteCount: Self.slotBytes, alignment: 64) }
        counts.initialize(repeating: 0)
        for _ in 1..<Self.slots { free.signal() }  // slot 0 is the caller's
        let thread = Thread { [self] in drain() }
        thread.name = "MapLoader write-behind"
        thread.start()
    }

    deinit {
        for buffer in buffers { buffer.deallocate() }
        counts.deallocate()
    }

    /// Copies `chunk` into the ring, handing over each slot it fills.
    func write(_ chunk: UnsafeRawBufferPointer) throws {
        // After the end no thread drains the ring: a write would wait forever.
        guard !ended else { throw PatchError.corrupt(detail: "a write after the file was finished") }
        if let error = failure.withLock({ $0 }) { throw error }
        var offset = 0
        while offset < chunk.count {
            let count = min(Self.slotBytes - used, chunk.count - offset)
            buffers[head].baseAddress!.advanced(by: used).copyMemory(from: chunk.baseAddress!.advanced(by: offset), byteCount: count)
            used += count
            offset += count
            if used == Self.slotBytes { handOver(count: used) }
        }
    }

    /// Hands over what is filled and waits until the thread has written every byte handed
    /// over so far (before a checkpoint that must not claim bytes still in the ring);
    /// throws the first error. The stream goes on afterwards.
    func waitUntilWritten() throws {
        guard !ended else { throw PatchError.corrupt(detail: "a write after the file was finished") }
        if used > 0 { handOver(count: used) }
        // Every slot but the caller's is free once the thread is done with all of them.
        for _ in 1..<Self.slots { free.wait() }
        for _ in 1..<Self.slots { free.signal() }
        if let error = failure.withLock({ $0 }) { throw error }
    }

    /// Hands over what is left, waits for the thread, and returns the digest of every
    /// byte written, or the first error.
    func finish() throws -> SHA256Hash {
        if used > 0 { handOver(count: used) }
        end()
        if let error = failure.withLock({ $0 }) { throw error }
        return SHA256Hash(hasher.finalize())
    }

    /// Ends the stream and waits for the thread (once).
    func end() {
        guard !ended else { return }
        ended = true
        counts[head] = -1
        filled.signal()
        done.wait()
    }

    private func handOver(count: Int) {
        counts[head] = count
        filled.signal()
        head = (head + 1) % Self.slots
        used = 0
        free.wait()
    }

    /// The thread: hashes and writes each filled slot in turn until the end marker; after
    /// an error it only frees slots, so the caller never waits forever.
    private func drain() {
        var tail = 0
        while true {
            filled.wait()
            let count = counts[tail]
            if count < 0 { break }
            if failure.withLock({ $0 == nil }) {
                let bytes = UnsafeRawBufferPointer(rebasing: buffers[tail][0..<count])
                do {
                    try file.writeAll(bytes)
                    hasher.update(bufferPointer: bytes)
                } catch {
                    failure.withLock { $0 = $0 ?? error }
                }
            }
            tail = (tail + 1) % Self.slots
            free.signal()
        }
        done.signal()
    }
}
