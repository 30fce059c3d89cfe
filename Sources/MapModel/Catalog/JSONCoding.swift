package import Foundation
import MapPlatform

/// The JSON settings every MapLoader file uses: ISO 8601 dates, sorted keys (stable bytes).
package enum JSONCoding {
    /// An encoder with sorted keys and ISO 8601 dates; `pretty` adds indentation.
    package static func encoder(pretty: Bool = true) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting =
            pretty
            ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
            : [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// A decoder for ISO 8601 dates.
    package static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    /// Decodes `T`, turning Foundation's nested error into one readable line.
    package static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws(JSONProblem) -> T {
        do {
            return try decoder().decode(type, from: data)
        } catch let DecodingError.dataCorrupted(context) {
            throw JSONProblem(context.path + context.debugDescription)
        } catch let DecodingError.keyNotFound(key, context) {
            throw JSONProblem(context.path + "missing field '\(key.stringValue)'")
        } catch let DecodingError.typeMismatch(_, context) {
            throw JSONProblem(context.path + context.debugDescription)
        } catch let DecodingError.valueNotFound(_, context) {
            throw JSONProblem(context.path + context.debugDescription)
        } catch {
            throw JSONProblem("\(error)")
        }
    }
}

/// Why a JSON document did not decode, as one line.
package struct JSONProblem: Error, CustomStringConvertible {
    /// The problem, with the JSON path where it was found.
    package let description: String
    package init(_ description: String) { self.description = description }
}

extension DecodingError.Context {
    fileprivate var path: String {
        let keys = codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
        return keys.isEmpty ? "" : "at \(keys.joined(separator: ".")): "
    }
}

extension Encodable {
    /// The value as MapLoader JSON bytes.
    package func jsonData(pretty: Bool = true) throws -> Data { try JSONCoding.encoder(pretty: pretty).encode(self) }
}
