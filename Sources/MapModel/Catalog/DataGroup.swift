import MapPlatform

/// A data group: one kind of data a leaf can carry (base map, POIs, transit, terrain…).
public struct DataGroup: Sendable, Hashable, Codable {
    /// Stable id, e.g. `poi`.
    public var id: String
    /// Human-readable name, e.g. `Points of interest`.
    public var title: String
    /// A required group is always installed and cannot be deselected.
    public var required: Bool
    /// Whether the group is selected when the user has not chosen.
    public var `default`: Bool

    /// A group definition.
    public init(id: String, title: String, required: Bool = false, default: Bool = false) {
        self.id = id
        self.title = title
        self.required = required
        self.default = `default`
    }

    private enum CodingKeys: String, CodingKey { case id, title, required, `default` }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        title = try container.decodeIfPresent(String.self, forKey: .title) ?? id
        required = try container.decodeIfPresent(Bool.self, forKey: .required) ?? false
        `default` = try container.decodeIfPresent(Bool.self, forKey: .default) ?? required
    }
}
