public import Foundation
import MapModel

/// The publisher's fields of a package (`metadata` of its node in the release's
/// `tree.json`: population, ISO codes, a name in another script, anything), read with the
/// types an app expects. They come with the signed manifest, so they are there offline
/// too, at the installed version.
extension PackageStatus {
    /// The names of the publisher's fields of this package, sorted.
    public var metadataKeys: [String] { (metadata ?? [:]).keys.sorted() }

    /// The publisher's field `key` decoded as `T` (`String`, `Int`, `Double`, `Bool`, an
    /// array, or a `Decodable` type of the app's for an object); `nil` when the package has
    /// no such field or it does not decode as `T`.
    ///
    /// ```swift
    /// let berlin = try await loader.package("de-berlin")
    /// let population = berlin.metadata("population", as: Int.self)
    /// let iso = berlin.metadata("iso", as: String.self)
    /// ```
    public func metadata<T: Decodable>(_ key: String, as type: T.Type = T.self) -> T? {
        guard let value = metadata?[key], let data = try? JSONEncoder().encode(value) else { return nil }
        return try? JSONDecoder().decode(T.self, from: data)
    }

    /// Every field the publisher gave this package, as one JSON object (keys sorted); `nil`
    /// when it gave none.
    public var metadataJSON: Data? {
        guard let metadata, !metadata.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try? encoder.encode(metadata)
    }
}
