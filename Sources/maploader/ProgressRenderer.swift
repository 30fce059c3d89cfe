import Foundation
import MapLoader

/// Shows a loader's events to a person: a redrawn progress bar (bytes, rate, ETA) on a
/// terminal, plain lines when stderr is piped, nothing with `--json`.
actor ProgressRenderer {
    private let quiet: Bool
    private let terminal = Output.stderrIsTerminal
    private var lastDraw = Date.distantPast
    private var announced = Set<String>()
    private var downloadStart: (time: Date, bytes: Int64)?
    private var barShown = false

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
            let how = switch (step.action, step.method) {
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
            let counter = progress.totalItems > 0 ? " (\(progress.completedItems + 1)/\(progress.totalItems))" : ""
            Output.error([progress.phase.rawValue, progress.item].compactMap { $0 }.joined(separator: " ") + counter)
        }
        guard terminal, now.timeIntervalSince(lastDraw) >= 0.1 || progress.fraction >= 1 else { return }
        lastDraw = now
        let width = 24
        let filled = Int(progress.fraction * Double(width))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        var text = "\(progress.phase.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) \(bar) \(Int(progress.fraction * 100))%"
        if progress.totalBytes > 0 {
            text += "  \(ByteFormat.string(progress.completedBytes))/\(ByteFormat.string(progress.totalBytes))"
            if progress.phase == .download, let start = downloadStart, now.timeIntervalSince(start.time) > 0.3,
               progress.completedBytes > start.bytes {
                let rate = Double(progress.completedBytes - start.bytes) / now.timeIntervalSince(start.time)
                let eta = Double(progress.totalBytes - progress.completedBytes) / max(rate, 1)
                text += "  \(ByteFormat.string(Int64(rate)))/s  ETA \(Int(eta.rounded()))s"
            }
        }
        if let item = progress.item { text += "  \(item)" }
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
