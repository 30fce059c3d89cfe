/// Identifies one installed data group: a package id and a group id.
package struct GroupKey: Sendable, Hashable {
    /// The package id.
    package var package: String
    /// The group id.
    package var group: String

    /// A key.
    package init(_ package: String, _ group: String) {
        self.package = package
        self.group = group
    }
}
