import Foundation
import MapLoader
import MapModel
import MapPlatform

/// Where the CLI writes: results to stdout, progress and errors to stderr.
enum Output {
    /// Whether stderr is a terminal (progress bars) or a pipe (plain lines).
    static let stderrIsTerminal = TerminalSize.standardErrorIsTerminal

    /// A line on stdout.
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((printable(text) + "\n").utf8))
    }

    /// `text` with every control character but newline and tab shown as `�`: error
    /// lines and listings carry what servers and manifests say (a header, a title), and an
    /// escape sequence from them must not retitle the window or rewrite the lines above.
    static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.map { isControl($0) ? "\u{FFFD}" : $0 }))
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0A, 0x09: false
        case 0x00...0x1F, 0x7F...0x9F: true
        default: false
        }
    }

    /// Text on stderr, as is.
    static func status(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// A line on stderr (control characters shown as `�`, as by ``line(_:)``).
    static func error(_ text: String) {
        status(printable(text) + "\n")
    }

    /// `value` as pretty JSON on stdout.
    static func json<T: Encodable>(_ value: T) {
        let data = (try? JSONCoding.encoder(pretty: true).encode(value)) ?? Data("{}".utf8)
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    /// `items` as aligned columns, one row per line.
    static func table(_ rows: [[String]]) {
        guard let columns = rows.map(\.count).max() else { return }
        var widths = [Int](repeating: 0, count: columns)
        for row in rows {
            for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) }
        }
        for row in rows {
            let cells = row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
            }
            line(cells.joined(separator: "  "))
        }
    }
}

/// The JSON object a failed command prints on stdout with `--json`.
struct ErrorJSON: Encodable {
    /// The one-line message also printed on stderr.
    let error: String
    /// The exit code, as a number.
    let exitCode: Int32
}
