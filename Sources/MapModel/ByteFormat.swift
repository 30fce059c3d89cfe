import Foundation
import MapPlatform

/// Sizes in human units: `1.4 MB`, `512 B` (decimal, as disks and downloads are sold).
package enum ByteFormat {
    /// `bytes` as a short human string.
    package static func string(_ bytes: Int64) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while abs(value) >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        if unit == 0 { return "\(bytes) B" }
        let digits = abs(value) < 10 ? 2 : (abs(value) < 100 ? 1 : 0)
        return "\(formatted(value, digits: digits)) \(units[unit])"
    }

    /// Parses a size as people write it: `2GB`, `500 MB`, `1.5G`, `750k`, `1048576`
    /// (decimal units; `KiB`, `MiB`, `GiB` are binary). `nil` when it is not a size.
    package static func parse(_ text: String) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let number = trimmed.prefix { $0.isNumber || $0 == "." }
        guard !number.isEmpty, let value = Double(number), value >= 0 else { return nil }
        let unit = trimmed.dropFirst(number.count).trimmingCharacters(in: .whitespaces)
        let factors: [String: Double] = [
            "": 1, "b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9,
            "t": 1e12, "tb": 1e12, "kib": 1024, "mib": 1_048_576, "gib": 1_073_741_824, "tib": 1_099_511_627_776,
        ]
        guard let factor = factors[unit], (value * factor) < 9e18 else { return nil }
        return Int64((value * factor).rounded())
    }

    package static func formatted(_ value: Double, digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        var text = "\(rounded)"
        if let dot = text.firstIndex(of: ".") {
            let decimals = text.distance(from: dot, to: text.endIndex) - 1
            if digits == 0 {
                text = String(text[..<dot])
            } else if decimals < digits {
                text += String(repeating: "0", count: digits - decimals)
            }
        }
        return text
    }
}
