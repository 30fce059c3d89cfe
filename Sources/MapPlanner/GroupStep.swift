public import MapModel

extension Plan {
    /// What an install or update does with one package's data group, and why.
    public struct Step: Sendable, Hashable, Encodable {
        /// What happens to the group.
        public enum Action: String, Sendable, Hashable, Codable {
            /// Already as wanted: carried over, zero bytes.
            case keep
            /// Not installed yet: fetched and installed.
            case install
            /// Installed at other content: replaced by the target content.
            case update
            /// Installed but no longer wanted: left out of the next generation.
            case remove
        }

        /// How the target bytes are obtained.
        public enum Method: String, Sendable, Hashable, Codable {
            /// Nothing to fetch.
            case none
            /// The full archive.
            case full
            /// A chain of patches applied to the installed files.
            case delta
        }

        /// The package id.
        public var package: String
        /// The group id.
        public var group: String
        /// What happens.
        public var action: Action
        /// How.
        public var method: Method
        /// Version labels the patch chain walks through, e.g. `["v1", "v2", "v3"]`; empty unless `method == .delta`.
        public var chain: [String]
        /// Bytes this step downloads.
        public var downloadBytes: Int64
        /// Bytes the full archive would cost (0 for keep and remove).
        public var fullBytes: Int64
        /// Unpacked bytes the step writes into the new generation.
        public var writeBytes: Int64
        /// Why this method was chosen, for people.
        public var reason: String
        /// The target archive (absent for remove).
        package var artifact: Artifact?
        /// The patch blobs of the chain, in order.
        package var patches: [PatchEdge]
        /// Why this step gave up its patch chain and fetched the full archive instead, as an
        /// update's report records it; `nil` when it did not (the planned step never has one).
        public var patchFailure: MapLoaderError?

        /// A step.
        package init(
            package: String, group: String, action: Action, method: Method, chain: [String] = [],
            downloadBytes: Int64 = 0, fullBytes: Int64 = 0, writeBytes: Int64 = 0, reason: String,
            artifact: Artifact? = nil, patches: [PatchEdge] = []
        ) {
            self.package = package
            self.group = group
            self.action = action
            self.method = method
            self.chain = chain
            self.downloadBytes = downloadBytes
            self.fullBytes = fullBytes
            self.writeBytes = writeBytes
            self.reason = reason
            self.artifact = artifact
            self.patches = patches
        }

        /// `package/group`, for messages.
        public var name: String { "\(package)/\(group)" }

        private enum CodingKeys: String, CodingKey {
            case package, group, action, method, chain, downloadBytes, fullBytes, writeBytes, reason, patchFailure
        }

        /// The step as JSON; ``patchFailure`` is written as its one-line message.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(package, forKey: .package)
            try container.encode(group, forKey: .group)
            try container.encode(action, forKey: .action)
            try container.encode(method, forKey: .method)
            try container.encode(chain, forKey: .chain)
            try container.encode(downloadBytes, forKey: .downloadBytes)
            try container.encode(fullBytes, forKey: .fullBytes)
            try container.encode(writeBytes, forKey: .writeBytes)
            try container.encode(reason, forKey: .reason)
            try container.encodeIfPresent(patchFailure?.description, forKey: .patchFailure)
        }
    }
}

/// The name the package uses for ``Plan/Step``.
package typealias GroupStep = Plan.Step

extension GroupStep {
    /// The record of this step after its patch chain failed and the full archive was
    /// fetched instead: what an ``UpdateReport`` lists. The plan keeps its own step.
    package func fellBack(after failure: MapLoaderError) -> GroupStep {
        var record = self
        record.patchFailure = failure
        record.method = .full
        record.chain = []
        record.patches = []
        record.downloadBytes = artifact?.size ?? 0
        record.reason = "patch failed (\(failure)); fell back to the full archive"
        return record
    }
}
