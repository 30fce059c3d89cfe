import ArgumentParser
import Foundation

/// `maploader serve <site>` (replaced when the server lands).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Serve a site folder over HTTP.")
}
