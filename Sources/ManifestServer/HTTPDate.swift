import Foundation

/// HTTP dates (RFC 9110 §5.6.7): formats IMF-fixdate, parses all three historic forms.
enum HTTPDate {
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun",
        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    /// Current time in whole seconds since 1970.
    static func nowSeconds() -> Int { Int(time(nil)) }

    /// `seconds` since 1970 as IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func format(_ seconds: Int) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(weekdays[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) "
            + "\(parts.tm_year + 1900) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    /// Seconds since 1970 for an IMF-fixdate, RFC 850 or asctime date; `nil` if it is none of them.
    static func parse(_ text: String) -> Int? {
        let fields = text.split(separator: " ")
        switch fields.count {
        case 6 where fields[0].hasSuffix(",") && fields[5] == "GMT":
            // Sun, 06 Nov 1994 08:49:37 GMT
            return make(day: fields[1], month: fields[2], year: fields[3], time: fields[4])
        case 4 where fields[0].hasSuffix(",") && fields[3] == "GMT":
            // Sunday, 06-Nov-94 08:49:37 GMT
            let date = fields[1].split(separator: "-", omittingEmptySubsequences: false)
            guard date.count == 3, date[2].count == 2, let yy = Int(date[2]) else { return nil }
            return make(
                day: date[0], month: date[1], year: Substring(String(yy < 70 ? 2000 + yy : 1900 + yy)),
                time: fields[2])
        case 5:
            // Sun Nov  6 08:49:37 1994
            return make(day: fields[2], month: fields[1], year: fields[4], time: fields[3])
        default:
            return nil
        }
    }

    private static func make(day: Substring, month: Substring, year: Substring, time: Substring) -> Int? {
        let clock = time.split(separator: ":", omittingEmptySubsequences: false)
        guard day.count <= 2, year.count == 4, clock.count == 3, clock.allSatisfy({ $0.count == 2 }),
            let d = Int32(day), let y = Int32(year), let monthIndex = months.firstIndex(of: String(month)),
            let h = Int32(clock[0]), let m = Int32(clock[1]), let s = Int32(clock[2]),
            (1...31).contains(d), (0...23).contains(h), (0...59).contains(m), (0...60).contains(s)
        else { return nil }
        var parts = tm()
        parts.tm_year = y - 1900
        parts.tm_mon = Int32(monthIndex)
        parts.tm_mday = d
        parts.tm_hour = h
        parts.tm_min = m
        parts.tm_sec = s
        return Int(timegm(&parts))
    }
}
