import Foundation
import MapModel
import MapPlanner

extension OperationProgress: CustomStringConvertible {
    /// `update 3, 41%: download de-berlin/base (1/2), 64.0 kB of 127 kB`.
    public var description: String {
        var text = "\(operation.rawValue) \(operationID), \(Int(overallFraction * 100))%: \(phase.rawValue)"
        if let item { text += " \(item)" }
        if totalItems > 0 { text += " (\(min(completedItems + 1, totalItems))/\(totalItems))" }
        if totalBytes > 0 { text += ", \(ByteFormat.string(completedBytes)) of \(ByteFormat.string(totalBytes))" }
        return text
    }
}

extension MapLoaderEvent: CustomStringConvertible {
    /// One line an app can log: `planned de-berlin/base: patch v1→v2, 21.4 kB (direct patch)`.
    public var description: String {
        switch self {
        case .started(let operation): return "\(operation.rawValue) started"
        case .waitingForLock(let pid): return "waiting for another maploader\(pid.map { " (pid \($0))" } ?? "") to finish"
        case .progress(let progress): return progress.description
        case .planned(let step): return "planned \(step)"
        case .connectionLost(let url, let reason, let retryIn):
            return "connection lost to \(url): \(reason); retrying in \(String(format: "%.1f", retryIn)) s"
        case .connectionFound(let url): return "connection back to \(url)"
        case .installed(let ids): return "installed \(ids.joined(separator: ", "))"
        case .uninstalled(let ids): return "uninstalled \(ids.joined(separator: ", "))"
        case .groupsChanged(let selected): return "data groups selected: \(selected.joined(separator: ", "))"
        case .updateChecked(let check):
            return check.updateAvailable
                ? "update available: \(check.installedVersion ?? "nothing")→\(check.currentVersion), \(check.plan)"
                : "up to date at \(check.currentVersion)"
        case .updated(let report): return report.description
        case .verified(let report):
            return "verified: \(report.problems.isEmpty ? "every installed file matches" : "\(report.problems.count) problem(s)")"
        case .finished(let operation): return "\(operation.rawValue) finished"
        case .failed(let operation, let error): return "\(operation.rawValue) failed: \(error)"
        }
    }
}
