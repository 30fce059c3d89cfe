package import Foundation
import MapModel
import MapPlatform

/// One HTTP GET that streams its body onto the end of a partial file, through a transport
/// (``HTTPTransport``: libcurl, or Foundation's URLSession). The decisions (status, ranges,
/// lengths, deadlines) are made by ``DownloadAttempt``, a value; the ``HTTPExchange``
/// feeds it what the transport reports and writes the bytes it accepts.
package enum HTTPDownload {
    package typealias Outcome = DownloadOutcome

    /// How an attempt ended, and the entity tag the server sent (the next window's `If-Range`).
    package struct Ending: Sendable {
        package let outcome: Outcome
        package let validator: String?
    }

    /// `host:port` of the URL, for messages.
    package static func host(of url: URL) -> String {
        (url.host ?? url.absoluteString) + (url.port.map { ":\($0)" } ?? "")
    }

    /// Runs one attempt: `Range` from the partial file's length, `If-Range: validator`.
    /// - Parameters:
    ///   - giveUp: when the whole file's time (``TransferDeadlines/total``) runs out.
    ///   - window: the last byte offset to fetch in this attempt (a bandwidth cap, or a
    ///     transport's ``HTTPTransport/window``, fetches a file in windows); `nil` for the
    ///     rest of the file.
    package static func run(
        url: URL, file: URL, limit: TransferLimit, validator: String?, deadlines: TransferDeadlines,
        giveUp: ContinuousClock.Instant? = nil, window: Int64? = nil, control: TransferControl? = nil,
        transport: any HTTPTransport = HTTPTransports.standard, clock: any TransferClock = SystemTransferClock(),
        progress: @escaping @Sendable (Int64) -> Void
    ) async -> Ending {
        let output: SystemFile
        let offset: Int64
        do {
            output = try SystemFile.openForAppend(file.path)
            offset = try output.size()
        } catch {
            return Ending(outcome: .failed(.storage(path: file.path, error)), validator: validator)
        }
        let attempt = DownloadAttempt(
            url: url.absoluteString, host: host(of: url), limit: limit, window: window,
            offset: offset, validator: validator, deadlines: deadlines, giveUp: giveUp,
            now: clock.now)
        if let decided = attempt.before {
            if case .retryable = decided { FileSystem.removeTree(file) }
            return Ending(outcome: decided, validator: validator)
        }
        let exchange = HTTPExchange(output: output, attempt: attempt, control: control, clock: clock, progress: progress)
        let ending = await transport.perform(url, exchange: exchange)
        return Ending(outcome: await exchange.finish(ending), validator: exchange.validator ?? validator)
    }
}
