import Foundation
import MapLoader
import MapModel
import MapPlatform

/// Shows a loader's events to a person: a redrawn progress bar (bytes, rate, ETA) on a
/// terminal, plain lines when stderr is piped, nothing with `--json`.
actor ProgressRenderer {
    private let quiet: Bool
    private let terminal = Output.stderrIsTerminal
    private var lastDraw = Date.distantPast
    private var announced = Set<String>()
    private var downloadStart: (time: Date, bytes: Int64)?
    private var barShown = false
    /// The latest download progress of the running operation.
    private var lastDownload: OperationProgress?

    init(quiet: Bool) { self.quiet = quiet }

    /// Renders events until the stream ends.
    func consume(_ events: AsyncStream<MapLoaderEvent>) async {
        for await event in events where !quiet { render(event) }
        clearBar()
    }

    private func render(_ event: MapLoaderEvent) {
        switch event {
        case .progress(let progress):
            show(progress)
        case .planned(let step):
            clearBar()
            let how =
                switch (step.action, step.method) {
                case (.remove, _): "remove"
                case (_, .delta): "patch \(step.chain.joined(separator: "→"))"
                case (_, .full): "full archive"
                default: "keep"
                }
            let size = step.downloadBytes > 0 ? " \(ByteFormat.string(step.downloadBytes))" : ""
            Output.error("  \(step.name): \(how)\(size) (\(step.reason))")
        case .connectionLost(let url, let reason, let retryIn):
            clearBar()
            Output.error("  connection lost (\(reason)) on \(url); retrying in \(String(format: "%.1f", retryIn)) s")
        case .connectionFound(let url):
            clearBar()
            Output.error("  connection back for \(url)")
        case .waitingForLock(let pid):
            clearBar()
            Output.error("waiting for another maploader\(pid.map { " (pid \($0))" } ?? "") to finish")
        case .started:
            downloadStart = nil
            lastDownload = nil
            announced = []
        case .failed, .finished:
            clearBar()
        default:
            break
        }
    }

    private func show(_ progress: OperationProgress) {
        let key = "\(progress.phase.rawValue) \(progress.item ?? "")"
        let now = Date()
        if progress.phase == .download, downloadStart == nil { downloadStart = (now, progress.completedBytes) }
        if !terminal, [.download, .extract, .patch, .commit].contains(progress.phase), announced.insert(key).inserted {
            // The item being worked on, of all; the commit is no item (the tracker keeps the
            // last group's count, which would read one past the total).
            let counter =
                progress.totalItems > 0 && progress.phase != .commit
                ? " (\(min(progress.completedItems + 1, progress.totalItems))/\(progress.totalItems))" : ""
            Output.error([progress.phase.rawValue, progress.item].compactMap { $0 }.joined(separator: " ") + counter)
        }
        if progress.phase == .download { lastDownload = progress }
        guard terminal else { return }
        // Groups download, unpack and patch at once: while bytes are still coming, the label
        // shows the whole download, so it never flips between phases.
        let shown: OperationProgress
        if let download = lastDownload, download.totalBytes > 0, download.completedBytes < download.totalBytes {
            shown = download
        } else {
            shown = progress
        }
        // The bar is the whole operation's (it never goes back); the label and bytes say
        // what runs now.
        let overall = progress.overallFraction
        guard now.timeIntervalSince(lastDraw) >= 0.1 || overall >= 1 else { return }
        lastDraw = now
        let columns = TerminalSize.columns()
        let width = max(8, min(24, columns / 4))
        let filled = Int(overall * Double(width))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        var text = "\(shown.phase.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) \(bar) \(Int(overall * 100))%"
        if shown.totalBytes > 0 {
            text += "  \(ByteFormat.string(shown.completedBytes))/\(ByteFormat.string(shown.totalBytes))"
            if shown.phase == .download, let start = downloadStart, now.timeIntervalSince(start.time) > 0.3,
                shown.completedBytes > start.bytes
            {
                let rate = Double(shown.completedBytes - start.bytes) / now.timeIntervalSince(start.time)
                let eta = Double(shown.totalBytes - shown.completedBytes) / max(rate, 1)
                text += "  \(ByteFormat.string(Int64(rate)))/s  ETA \(Int(eta.rounded()))s"
            }
        }
        if let item = shown.item { text += "  \(item)" }
        // Never wider than the terminal: a wrapped line cannot be redrawn in place.
        if text.count > columns - 1 { text = String(text.prefix(max(1, columns - 2))) + "…" }
        Output.status("\r\u{1B}[2K" + text)
        barShown = true
    }

    private func clearBar() {
        if barShown {
            Output.status("\r\u{1B}[2K")
            barShown = false
        }
    }
}
