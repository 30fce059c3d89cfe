import Foundation
import MapPlatform

/// Copies a byte span of a file to a socket in bounded chunks, applying the
/// throttle, corruption and drop faults on the way.
struct BodyStreamer {
    /// Largest chunk read and sent at once; the only body memory a response holds.
    static let chunkSize = 256 * 1024

    /// How streaming ended.
    enum Outcome: Equatable {
        /// Every byte of the span was sent.
        case complete
        /// Stopped at the drop limit and shut the connection down on purpose.
        case dropped
        /// The client went away (or the server stopped) mid-body.
        case clientGone
        /// The file got shorter while being sent; the response cannot be completed.
        case fileShrunk
    }

    let file: ServedFile
    let socket: Int32
    let offset: Int64
    let length: Int64
    /// Body bytes to send before shutting the connection down, or `nil`.
    let dropAfter: Int64?
    let corruptOffset: Int64?
    let bytesPerSecond: Int?

    /// Streams the span; `willSend` is told each chunk's size just before it is sent,
    /// and a negative correction if the socket then took fewer bytes.
    func stream(willSend: (Int64) -> Void) -> (sent: Int64, outcome: Outcome) {
        let limit = min(length, dropAfter ?? length)
        let chunk = bytesPerSecond.map { max(1, min(Self.chunkSize, $0 / 20)) } ?? Self.chunkSize
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        let clock = ContinuousClock()
        let began = clock.now

        var sent: Int64 = 0
        while sent < limit {
            let position = offset + sent
            let n = file.read(into: buffer, count: Int(min(Int64(chunk), limit - sent)), at: position)
            guard n > 0 else { return (sent, .fileShrunk) }
            if let corrupt = corruptOffset, corrupt >= position, corrupt < position + Int64(n) {
                buffer[Int(corrupt - position)] ^= 0xFF
            }
            willSend(Int64(n))
            let written = Socket.sendAll(socket, UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            sent += Int64(written)
            guard written == n else {
                willSend(Int64(written - n))
                return (sent, .clientGone)
            }
            if let rate = bytesPerSecond, rate > 0 {
                let due = began + .seconds(Double(sent) / Double(rate))
                Self.sleep(until: due, clock: clock)
            }
        }
        if limit < length {
            Socket.shutdownBoth(socket)
            return (sent, .dropped)
        }
        return (sent, .complete)
    }

    private static func sleep(until due: ContinuousClock.Instant, clock: ContinuousClock) {
        let wait = due - clock.now
        guard wait > .zero else { return }
        let parts = wait.components
        var request = timespec(tv_sec: Int(parts.seconds), tv_nsec: Int(parts.attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
