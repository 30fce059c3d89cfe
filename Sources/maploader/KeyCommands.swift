import ArgumentParser
import Foundation
import MapLoader
import MapModel
import MapPublisher

/// `maploader keygen <key-file>`.
struct KeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Make an Ed25519 signing key for a publisher and print its public key.",
        discussion: """
            Keep the key file secret (it is written with mode 0600). Give the printed public key \
            to clients: maploader <command> --trust-key KEY, or MAPLOADER_TRUST_KEY.
            """)

    @Argument(help: "Where to write the private key (never overwritten).")
    var keyFile: String

    @Flag(name: .long, help: "Print {\"publicKey\", \"keyFile\"} as JSON.")
    var json = false

    func run() throws {
        do {
            let key = try SigningKeyFile.generate(at: URL(fileURLWithPath: keyFile))
            if json {
                Output.json(["publicKey": key.base64, "keyFile": keyFile])
            } else {
                Output.line(key.base64)
            }
        } catch {
            throw PublisherFailure(error, doing: "write \(keyFile)", json: json).exit()
        }
    }
}

/// `maploader sign --site <dir> --key <key-file>`.
struct SignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Re-sign a site's catalog with a new serial and expiry, without publishing a version.")

    @Option(name: .long, help: "The site folder.")
    var site: String

    @Option(name: .long, help: "The signing key file.")
    var key: String

    @Option(name: .long, parsing: .unconditional, help: "Days the catalog stays valid (0: never expires).")
    var validDays: Double = 30

    @Flag(name: .long, help: "Sign a site that is signed with another key.")
    var rekey = false

    @Flag(name: .long, help: "Print the signed catalog as JSON.")
    var json = false

    func validate() throws {
        guard validDays >= 0, validDays.isFinite else { throw ValidationError("--valid-days must be 0 (never expires) or more") }
    }

    func run() throws {
        do {
            let catalog = try Publisher.resign(
                site: URL(fileURLWithPath: site), keyFile: URL(fileURLWithPath: key),
                validity: validDays > 0 ? validDays * 86400 : nil, rekey: rekey)
            if json { return Output.json(catalog) }
            Output.line("signed catalog serial \(catalog.serial), current \(catalog.current), expires \(catalog.expires.map { "\($0)" } ?? "never")")
        } catch {
            throw PublisherFailure(error, doing: "sign \(site)", json: json).exit()
        }
    }
}

/// `maploader forget-keys [KEY…]`.
struct ForgetKeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget-keys",
        abstract: "Stop trusting publisher keys saved in the data directory.",
        discussion: """
            A data directory remembers every publisher key it was given, and then refuses \
            catalogs not signed by one of them, even with --allow-unsigned. Forget a key when a \
            publisher rotates keys or really stops signing. With no key named, all are forgotten.

            Example:
              maploader forget-keys
            """)

    @OptionGroup var client: ClientOptions

    @Argument(help: ArgumentHelp("Public keys to forget (base64); all when none is named.", valueName: "key"))
    var keys: [String] = []

    func validate() throws {
        for key in keys where PublicKey(base64: key) == nil {
            throw ValidationError("'\(key)' is not a base64 Ed25519 public key")
        }
    }

    func run() async throws {
        let forget = keys.isEmpty ? nil : keys.compactMap(PublicKey.init(base64:))
        let kept = try await client.withLoader { try await $0.forgetTrustedKeys(forget) }
        if client.json {
            Output.json(["trustedKeys": kept.map(\.base64)])
        } else {
            Output.line(kept.isEmpty ? "no publisher key is trusted now" : "still trusted: \(kept.map(\.base64).joined(separator: ", "))")
        }
    }
}
