import MapPlatform
/// Sizes in human units: `1.4 MB`, `512 B` (decimal, as disks and downloads are sold).
package enum ByteFormat {
    /// `bytes` as a short human string.
    public static func string(_ bytes: Int64) -> String {
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
