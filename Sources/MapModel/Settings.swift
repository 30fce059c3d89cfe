import Foundation
import MapPlatform

/// The user's choices, kept in `<data-dir>/settings.json`.
package struct Settings: Sendable, Hashable, Codable {
    /// Explicit data-group choices: `true` selected, `false` deselected. Groups not listed
    /// follow the manifest's default.
    package var groups: [String: Bool]
    /// Highest catalog serial accepted so far (rollback protection).
    package var lastSerial: Int?
    /// Publisher public keys (base64) trusted for this data directory.
    package var trustedKeys: [String]?
    /// The newest root of trust accepted from the site, for sites that publish roots
    /// (``RootMetadata``): catalogs must be signed by its catalog keys, and the next root
    /// by a threshold of its root keys. Once set, the site can never fall back to keys alone.
    package var trustedRoot: RootMetadata?
    /// The caller's own key/value metadata per installed package id (``MapLoader/setTags(_:on:)``):
    /// kept across updates, removed with the package.
    package var tags: [String: [String: String]]?
    /// The most bytes the data directory may hold (`maploader config set quota`); `nil` for
    /// no limit. ``MapLoader/Configuration/quota``, when set, takes precedence.
    package var quota: Int64?

    /// Settings with no explicit choices.
    package init(
        groups: [String: Bool] = [:], lastSerial: Int? = nil, trustedKeys: [String]? = nil,
        tags: [String: [String: String]]? = nil
    ) {
        self.groups = groups
        self.lastSerial = lastSerial
        self.trustedKeys = trustedKeys
        self.tags = tags
    }

    /// The groups selected under `manifestGroups`: required ones, explicit choices, then defaults.
    package func selectedGroups(_ manifestGroups: [DataGroup]) -> Set<String> {
        Set(manifestGroups.filter { $0.required || (groups[$0.id] ?? $0.default) }.map(\.id))
    }
}
