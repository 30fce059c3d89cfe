/// What the data directory takes on disk (``MapLoader/diskUsage()``). Sizes are apparent
/// sizes (file lengths, as `du --apparent-size` counts them), and a file with several
/// names (the hard links that carry unchanged files from one version to the next) is
/// counted once.
public struct DiskUsage: Sendable, Hashable, Encodable {
    /// One installed data group.
    public struct Group: Sendable, Hashable, Encodable {
        /// The group id, e.g. `base`.
        public var group: String
        /// Bytes of its files.
        public var bytes: Int64
        /// Number of files.
        public var files: Int
    }

    /// One installed package.
    public struct Package: Sendable, Hashable, Encodable {
        /// The package id.
        public var id: String
        /// Bytes of all its groups.
        public var bytes: Int64
        /// Its groups, by id.
        public var groups: [Group]
    }

    /// Installed packages, by id.
    public var packages: [Package]
    /// Bytes of the installed maps (the sum over `packages`).
    public var installedBytes: Int64
    /// Bytes of everything else in the data directory: partial downloads, the manifest
    /// cache, versions still held by a reader, bookkeeping. ``MapLoader/collectGarbage()``
    /// frees what of it is not in use.
    public var otherBytes: Int64
    /// Bytes of the whole data directory.
    public var totalBytes: Int64

    package init(packages: [Package], installedBytes: Int64, otherBytes: Int64, totalBytes: Int64) {
        self.packages = packages
        self.installedBytes = installedBytes
        self.otherBytes = otherBytes
        self.totalBytes = totalBytes
    }
}

extension DiskUsage.Group {
    package init(_ group: String, bytes: Int64, files: Int) {
        self.group = group
        self.bytes = bytes
        self.files = files
    }
}

extension DiskUsage.Package {
    package init(_ id: String, groups: [DiskUsage.Group]) {
        self.id = id
        self.groups = groups
        self.bytes = groups.reduce(0) { $0 + $1.bytes }
    }
}

/// What ``MapLoader/collectGarbage()`` removed.
public struct CleanupReport: Sendable, Hashable, Encodable {
    /// Data-directory-relative paths removed: older versions no reader holds, leftovers of
    /// interrupted operations, partial downloads, manifests of versions no longer installed.
    public var removed: [String]
    /// Bytes the removals freed (files whose last name was removed).
    public var freedBytes: Int64

    package init(removed: [String], freedBytes: Int64) {
        self.removed = removed
        self.freedBytes = freedBytes
    }

    /// This report and `other` as one (what two passes of one cleanup removed).
    package func adding(_ other: CleanupReport) -> CleanupReport {
        CleanupReport(removed: (removed + other.removed).sorted(), freedBytes: freedBytes.plusSaturating(other.freedBytes))
    }
}

/// What ``MapLoader/export(_:to:)`` wrote.
public struct ExportReport: Sendable, Hashable, Encodable {
    /// The folder holding the exported site.
    public var folder: String
    /// The exported packages (leaf ids).
    public var packages: [String]
    /// The map version exported.
    public var version: String
    /// Data groups exported.
    public var groups: Int
    /// Bytes of map files exported.
    public var bytes: Int64

    package init(folder: String, packages: [String], version: String, groups: Int, bytes: Int64) {
        self.folder = folder
        self.packages = packages
        self.version = version
        self.groups = groups
        self.bytes = bytes
    }
}
