import Testing

@testable import maploader

/// What the CLI prints for people: text that servers and manifests supply (a header in an
/// error line, a title in a listing) cannot drive the terminal.
@Suite struct OutputTests {
    @Test func controlCharactersFromServersAreShownNotObeyed() {
        let hostile = "bytes 0-1/2\u{1B}]0;owned\u{07}\u{1B}[2K\u{1B}[1A\r\u{9B}31m"
        let shown = Output.printable(hostile)
        #expect(!shown.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        #expect(shown.hasPrefix("bytes 0-1/2\u{FFFD}]0;owned\u{FFFD}"))
        #expect(Output.printable("Zürich\tcafé\n") == "Zürich\tcafé\n", "text, tabs and newlines stay")
    }
}
