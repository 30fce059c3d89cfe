public import Foundation
public import MapModel

extension PackageStatus {
    /// The state of a package on this device.
    public enum State: String, Sendable, Hashable, Codable {
        /// Nothing of it is installed.
        case notInstalled
        /// Some of its leaves or selected groups are installed, not all.
        case partiallyInstalled
        /// Everything selected is installed at the current version.
        case installed
        /// Installed, and the site has newer content for it.
        case updateAvailable
        /// Installed files differ from what was installed: run `verify` or `repair`.
        case inconsistent
    }
}

/// The name the package uses for ``PackageStatus/State``.
package typealias PackageState = PackageStatus.State

extension PackageStatus.State: CustomStringConvertible {
    /// The state in words, for people ("partly installed"); `rawValue` is for programs.
    public var description: String {
        switch self {
        case .notInstalled: "not installed"
        case .partiallyInstalled: "partly installed"
        case .installed: "installed"
        case .updateAvailable: "update available"
        case .inconsistent: "changed locally"
        }
    }
}

/// One node of the package tree with its state on this device; `Identifiable` by its
/// package id, so a SwiftUI `List` or `ForEach` shows packages as they are.
public struct PackageStatus: Sendable, Hashable, Encodable, Identifiable {
    /// The package id.
    public var id: String
    /// Its name.
    public var title: String
    /// 0 for the root, 1 for continents, and so on.
    public var depth: Int
    /// The parent's id; `nil` for the root.
    public var parent: String?
    /// Whether it is a leaf (carries data itself).
    public var isLeaf: Bool
    /// Its state.
    public var state: PackageStatus.State
    /// The installed version, when anything of it is installed.
    public var version: String?
    /// Bytes an install (or, when installed, an update) of it would download.
    public var downloadSize: Int64
    /// Bytes its installed files take.
    public var sizeOnDisk: Int64
    /// Installed group ids (leaves only).
    public var groups: [String]
    /// Every data group the package offers at the tree's version, with its size and
    /// whether it is selected and installed (leaves only).
    public var offered: [PackageStatus.Offer] = []
    /// Its box, if published.
    public var bbox: BoundingBox?
    /// Publisher metadata, as is.
    package var metadata: [String: JSONValue]?
    /// The caller's own key/value metadata (``MapLoader/setTags(_:on:)``; installed leaves only).
    public var tags: [String: String] = [:]
}

extension PackageStatus {
    /// One data group a leaf package offers.
    public struct Offer: Sendable, Hashable, Encodable {
        /// The group id, e.g. `poi`.
        public var id: String
        /// Bytes of its full archive (what installing it downloads).
        public var downloadSize: Int64
        /// Bytes its files take once installed.
        public var unpackedSize: Int64
        /// Whether the data-group selection includes it.
        public var selected: Bool
        /// Whether it is installed on this device.
        public var installed: Bool
    }
}

/// The name the package uses for ``PackageStatus/Offer``.
package typealias GroupOffer = PackageStatus.Offer

/// The package tree and its states, parents before children.
public struct PackageTree: Sendable, Hashable, Encodable {
    /// The version the tree was read from (the installed one, or the newest when nothing is installed).
    public var version: String
    /// The newest published version.
    public var currentVersion: String
    /// Every node, depth first.
    public var packages: [PackageStatus]
    /// Set when the site could not be reached and the tree was read from what is installed.
    public var offline: Offline?

    /// Why a tree was read offline, and how old what it knows of the site is.
    public struct Offline: Sendable, Hashable, Encodable {
        /// Why the site was not read (the network error's one-line message).
        public var reason: String
        /// When the catalog this device last accepted from the site arrived; `nil` when
        /// none is kept. Versions newer than that are unknown here.
        public var catalogAccepted: Date?

        /// An offline mark.
        public init(reason: String, catalogAccepted: Date?) {
            self.reason = reason
            self.catalogAccepted = catalogAccepted
        }
    }
}

/// A data group and whether it is selected.
public struct DataGroupStatus: Sendable, Hashable, Encodable {
    /// The definition.
    public var group: DataGroup
    /// Whether future installs and updates fetch it.
    public var selected: Bool

    /// A value with every stored property given.
    package init(group: DataGroup, selected: Bool) {
        self.group = group
        self.selected = selected
    }
}

/// What `checkForUpdate` found.
public struct UpdateCheck: Sendable, Hashable, Encodable {
    /// The installed version, `nil` when nothing is installed.
    public var installedVersion: String?
    /// The newest published version.
    public var currentVersion: String
    /// Whether an update would change installed files.
    public var updateAvailable: Bool
    /// The plan `performUpdate` would carry out with the asked strategy.
    public var plan: Plan

    /// A value with every stored property given.
    package init(installedVersion: String?, currentVersion: String, updateAvailable: Bool, plan: Plan) {
        self.installedVersion = installedVersion
        self.currentVersion = currentVersion
        self.updateAvailable = updateAvailable
        self.plan = plan
    }
}

/// What an update (or install or uninstall) did.
public struct UpdateReport: Sendable, Hashable, Encodable {
    /// Version before.
    public var fromVersion: String?
    /// Version after.
    public var toVersion: String?
    /// Every group's step as carried out (with fallbacks applied).
    public var steps: [Plan.Step]
    /// Bytes downloaded, resumed partial files included only for what was fetched now.
    public var downloadedBytes: Int64
    /// Whether a new generation was committed.
    public var committed: Bool
    /// Wall time, seconds.
    public var seconds: Double
    /// Bytes of large patched files that an earlier, interrupted run had already produced
    /// and this one continued from (segments are checkpointed), rather than producing again.
    public var resumedBytes: Int64 = 0

    /// A value with every stored property given.
    package init(fromVersion: String?, toVersion: String?, steps: [GroupStep], downloadedBytes: Int64, committed: Bool, seconds: Double) {
        self.fromVersion = fromVersion
        self.toVersion = toVersion
        self.steps = steps
        self.downloadedBytes = downloadedBytes
        self.committed = committed
        self.seconds = seconds
    }

    /// The report of an operation that changed nothing at `version`: `steps` were planned
    /// (all of them keeps, or a dry run) and nothing was downloaded or committed.
    package static func unchanged(at version: String?, steps: [GroupStep] = []) -> UpdateReport {
        UpdateReport(fromVersion: version, toVersion: version, steps: steps, downloadedBytes: 0, committed: false, seconds: 0)
    }
}

/// What `verify` found.
public struct VerifyReport: Sendable, Hashable, Encodable {
    /// One broken group.
    public struct Problem: Sendable, Hashable, Encodable {
        /// The package id.
        public var package: String
        /// The group id.
        public var group: String
        /// What differs.
        public var detail: String

        /// A value with every stored property given.
        package init(package: String, group: String, detail: String) {
            self.package = package
            self.group = group
            self.detail = detail
        }
    }

    /// Groups checked.
    public var groupsChecked: Int
    /// Broken groups.
    public var problems: [Problem]
    /// Whether every file matched.
    public var ok: Bool { problems.isEmpty }

    /// A value with every stored property given.
    package init(groupsChecked: Int, problems: [Problem]) {
        self.groupsChecked = groupsChecked
        self.problems = problems
    }
}
