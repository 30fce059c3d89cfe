import Foundation
import MapModel

// One readable line each, for logs and debugging (`print(step)`), with no module names or
// raw dumps; programs read the values' properties or their JSON.

extension Plan.Step: CustomStringConvertible {
    /// `de-berlin/base: patch v1→v2, 21.4 kB (direct patch)`.
    public var description: String {
        switch (action, method) {
        case (.keep, _): return "\(name): kept (\(reason))"
        case (.remove, _): return "\(name): removed (\(reason))"
        case (_, .delta):
            return "\(name): patch \(chain.joined(separator: "→")), \(ByteFormat.string(downloadBytes)) (\(reason))"
        default:
            return "\(name): \(action == .install ? "install" : "update") from the full archive, \(ByteFormat.string(downloadBytes)) (\(reason))"
        }
    }
}

extension Plan: CustomStringConvertible {
    /// `plan to v2: 3 groups, 1 patched, 1 in full, 1 kept; download 143 kB, peak disk 310 kB`.
    public var description: String {
        let count = { (method: GroupStep.Method) in steps.filter { $0.method == method && $0.action != .keep }.count }
        return "plan to \(version): \(steps.count) group(s), \(count(.delta)) patched, \(count(.full)) in full, "
            + "\(steps.filter { $0.action == .keep }.count) kept, \(steps.filter { $0.action == .remove }.count) removed; "
            + "download \(ByteFormat.string(downloadBytes)), peak disk \(ByteFormat.string(peakBytes))"
    }
}

extension UpdateReport: CustomStringConvertible {
    /// `updated v1→v2: 2 group(s) changed, 21.4 kB downloaded in 0.3 s`.
    public var description: String {
        guard committed else { return "nothing to do (version \(toVersion ?? "none"))" }
        let changed = steps.filter { $0.action != .keep }.count
        return "updated \(fromVersion ?? "nothing")→\(toVersion ?? "nothing"): \(changed) group(s) changed, "
            + "\(ByteFormat.string(downloadedBytes)) downloaded in \(String(format: "%.1f", seconds)) s"
    }
}
