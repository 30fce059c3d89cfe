/// One thing the publisher says of a file's payload: why a payload a publisher would expect
/// was not made, or which trial a rule or an estimate left out. Its kind says who reads it,
/// so no reader filters notes by their words.
package struct PayloadNote: Sendable, Equatable, CustomStringConvertible {
    /// What the note is about.
    package enum Kind: Sendable, Equatable {
        /// Why no delta was made (an empty old file, a pair beyond zstd's window): travels
        /// with the patch edge (`check-update --json`), and is dropped once a delta of
        /// another codec wins.
        case noDelta
        /// Why the file is not (wholly) seen through (deflate streams zlib does not
        /// reproduce): travels with the patch edge.
        case notSeenThrough
        /// A trial a rule or an estimate left out, or one that lost and by how much: the
        /// publish log only, as a client has nothing to act on in it.
        case trial
    }

    /// What the note is about.
    package var kind: Kind
    /// The note in words.
    package var description: String

    /// A note of `kind` saying `description`.
    package init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    /// Whether only the publish log shows it.
    package var logOnly: Bool { kind == .trial }

    /// `notes` as one line, parts apart by "; "; nil for none.
    package static func line(_ notes: [PayloadNote]) -> String? {
        notes.isEmpty ? nil : notes.map(\.description).joined(separator: "; ")
    }
}
