import ArgumentParser
import Foundation
import MapLoader
import MapModel
import MapPublisher

/// `maploader root new|sign|publish|show`: a site's root of trust.
struct RootCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "root",
        abstract: "Keep a site's root of trust: offline root keys (with a threshold) that say which keys sign catalogs.",
        discussion: """
            A site signed by one key cannot survive that key leaking. With roots, a few offline \
            root keys (say 2 of 3 release managers) sign root versions, and each root names the \
            online keys that may sign catalogs. Delegating, rotating or revoking a catalog key, \
            or replacing root keys, is a new root version, signed by a threshold of the old \
            root keys and of the new ones; devices walk to it version by version at their next \
            check, untouched. Root keys never touch a build machine: each signs on its own \
            machine ('root sign' writes a signature file), and 'root publish' merges them.

            Devices trust the site through any one of its keys (--trust-key), root or catalog: \
            a device that trusted the single publisher key before moves to the roots by itself. \
            Keys are given as base64 or as a file holding one (what 'maploader keygen' prints).

            Examples:
              maploader keygen a.key > a.pub
              maploader keygen b.key > b.pub
              maploader root new --site site -r a.pub -r b.pub -c publisher.pub -o r1.json
              maploader root sign r1.json --key a.key -o r1.a.sig
              maploader root sign r1.json --key b.key -o r1.b.sig
              maploader root publish r1.json r1.a.sig r1.b.sig --site site
              maploader sign --site ./site --key publisher.key
              maploader root show --site ./site
            """,
        subcommands: [RootNewCommand.self, RootSignCommand.self, RootPublishCommand.self, RootShowCommand.self])
}

/// `maploader root new --site <dir> … -o <draft>`.
struct RootNewCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "new",
        abstract: "Write the draft of the site's next root version: root keys, threshold, catalog keys.",
        discussion: """
            Starts from the site's newest root (root 1 needs --root-key; its threshold is a \
            majority of its root keys unless --threshold says otherwise). To rotate the online \
            key: --catalog-key NEW --revoke-catalog-key OLD. To replace root keys: --root-key \
            for each new one (the old root keys must still sign this version). Then have the \
            root keys sign the draft ('root sign') and publish it ('root publish').
            """)

    @Option(name: .long, help: "The site folder.")
    var site: String

    @Option(
        name: [.customShort("r"), .long],
        help: ArgumentHelp("A root key (base64, or a file holding it); repeat for each. Default: the current root keys.", valueName: "key"))
    var rootKey: [String] = []

    @Option(name: .long, parsing: .unconditional, help: "How many root keys must sign a root version. Default: the current threshold.")
    var threshold: Int?

    @Option(
        name: [.customShort("c"), .long],
        help: ArgumentHelp("Delegate a catalog-signing key (base64, or a file holding it); repeat for each.", valueName: "key"))
    var catalogKey: [String] = []

    @Option(name: .long, help: ArgumentHelp("Revoke a catalog-signing key (base64, or a file holding it); repeat for each.", valueName: "key"))
    var revokeCatalogKey: [String] = []

    @Option(name: .long, parsing: .unconditional, help: "Days the delegated catalog keys stay valid (0: until revoked).")
    var catalogKeyDays: Double = 0

    @Option(
        name: .long, parsing: .unconditional,
        help: "Days the root stays valid; devices refuse the site after that until a newer root is published (0: never expires).")
    var validDays: Double = 365

    @Option(name: [.short, .long], help: "Where to write the draft.")
    var output: String

    func validate() throws {
        for key in rootKey + catalogKey + revokeCatalogKey where PublicKey(given: key) == nil {
            throw ValidationError("'\(key)' is neither a base64 Ed25519 public key nor a file holding one (maploader keygen prints one)")
        }
        guard catalogKeyDays >= 0, catalogKeyDays.isFinite, validDays >= 0, validDays.isFinite else {
            throw ValidationError("--catalog-key-days and --valid-days must be 0 or more")
        }
        if let threshold, threshold < 1 { throw ValidationError("--threshold must be 1 or more") }
    }

    func run() throws {
        var changes = RootChanges()
        changes.rootKeys = rootKey.isEmpty ? nil : rootKey.compactMap(PublicKey.init(given:))
        changes.threshold = threshold
        changes.addCatalogKeys = catalogKey.compactMap(PublicKey.init(given:))
        changes.revokeCatalogKeys = revokeCatalogKey.compactMap(PublicKey.init(given:))
        changes.catalogKeyValidity = catalogKeyDays > 0 ? catalogKeyDays * 86400 : nil
        changes.validity = validDays > 0 ? validDays * 86400 : nil
        do {
            let draft = try SiteRoots.draft(site: URL(fileURLWithPath: site), changes: changes)
            try draft.write(to: URL(fileURLWithPath: output))
            Output.line("wrote \(output): have a threshold of the root keys sign it with 'maploader root sign \(output) --key KEY-FILE'")
        } catch {
            throw PublisherFailure(error, doing: "write \(output)", json: false).exit()
        }
    }
}

/// `maploader root sign <draft> --key <key-file> -o <signature>`.
struct RootSignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Sign a root draft with one root key, writing a signature file to merge at 'root publish'.")

    @Argument(help: "The root draft ('maploader root new').")
    var draft: String

    @Option(name: .long, help: "A root key file (of this root, or of the root before it).")
    var key: String

    @Option(name: [.short, .long], help: "Where to write the signature file.")
    var output: String

    func run() throws {
        do {
            let signature = try SiteRoots.sign(try Data(contentsOf: URL(fileURLWithPath: draft)), keyFile: URL(fileURLWithPath: key))
            try signature.jsonData().write(to: URL(fileURLWithPath: output))
            Output.line("wrote \(output)")
        } catch {
            throw PublisherFailure(error, doing: "sign \(draft)", json: false).exit()
        }
    }
}

/// `maploader root publish <draft> <signature>… --site <dir>`.
struct RootPublishCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Publish a signed root draft as the site's next root, once a threshold of the old and the new root keys signed it.")

    @Argument(help: "The root draft.")
    var draft: String

    @Argument(help: "Signature files ('maploader root sign').")
    var signatures: [String]

    @Option(name: .long, help: "The site folder.")
    var site: String

    func run() throws {
        do {
            let files = try signatures.map { try JSONCoding.decode(CatalogSignature.self, from: Data(contentsOf: URL(fileURLWithPath: $0))) }
            let root = try SiteRoots.publish(
                try Data(contentsOf: URL(fileURLWithPath: draft)), signatures: files,
                site: URL(fileURLWithPath: site))
            Output.line(
                "published root \(root.version): \(root.rootKeys.count) root key(s), threshold \(root.threshold), \(root.catalogKeys.count) catalog key(s); sign the catalog again (maploader sign or publish) so devices move to it"
            )
        } catch {
            throw PublisherFailure(error, doing: "publish \(draft)", json: false).exit()
        }
    }
}

/// `maploader root show --site <dir>`.
struct RootShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print the site's newest root: its version, root keys, threshold and catalog keys.")

    @Option(name: .long, help: "The site folder.")
    var site: String

    func run() throws {
        do {
            guard let (_, bytes) = try SiteRoots.newest(in: URL(fileURLWithPath: site)) else {
                Output.line("\(site) has no root: its catalog is signed by a single key")
                return
            }
            Output.line(String(decoding: bytes, as: UTF8.self))
        } catch {
            throw PublisherFailure(error, doing: "read \(site)", json: false).exit()
        }
    }
}

extension PublicKey {
    /// A key given on the command line: base64, or the path of a file holding it.
    init?(given text: String) {
        if let key = PublicKey(base64: text) {
            self = key
        } else if let contents = try? String(contentsOfFile: text, encoding: .utf8), let key = PublicKey(base64: contents) {
            self = key
        } else {
            return nil
        }
    }
}
