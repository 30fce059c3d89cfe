import MapModel

/// The steps that take the installed maps to a target: computed by the planner, carried
/// out by ``MapLoader``.
public struct Plan: Sendable, Hashable, Encodable {
    /// The manifest version the plan reaches.
    public var version: String
    /// One step per package group that is, or will be, installed.
    public var steps: [Plan.Step]

    /// A plan.
    public init(version: String, steps: [Plan.Step]) {
        self.version = version
        self.steps = steps
    }

    /// Bytes the plan downloads.
    public var downloadBytes: Int64 { steps.saturatingSum(\.downloadBytes) }
    /// Bytes the same changes would cost with full archives only.
    public var fullBytes: Int64 { steps.saturatingSum(\.fullBytes) }
    /// Most extra disk space the plan needs at once: downloads plus the new files, while
    /// the old generation stays in place until the switch.
    public var peakBytes: Int64 { steps.saturatingSum { $0.downloadBytes.plusSaturating($0.writeBytes) } }
    /// Whether the plan changes anything.
    public var changesFiles: Bool { steps.contains { $0.action != .keep } }

    private enum CodingKeys: String, CodingKey { case version, steps, downloadBytes, fullBytes, peakBytes }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(steps, forKey: .steps)
        try container.encode(downloadBytes, forKey: .downloadBytes)
        try container.encode(fullBytes, forKey: .fullBytes)
        try container.encode(peakBytes, forKey: .peakBytes)
    }
}

extension Plan {
    /// How an update fetches changed groups.
    public enum Strategy: String, Sendable, Hashable, Codable, CaseIterable {
        /// The cheapest verified patch chain per group, else the full archive.
        case delta
        /// Full archives only.
        case full
    }
}

/// The name the package uses for ``Plan/Strategy``.
package typealias UpdateStrategy = Plan.Strategy
