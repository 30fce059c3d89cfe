import ArgumentParser
import MapLoader

/// `maploader locate <lat> <lon>`: the smallest package covering a point.
struct LocateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "locate",
        abstract: "Find the smallest package whose boundary contains a point.",
        discussion: "Example: maploader locate 52.52 13.40   (Berlin). Exits 4 when no package covers the point.")

    @OptionGroup var client: ClientOptions

    @Argument(help: "Latitude in degrees, -90…90.")
    var latitude: Double

    @Argument(help: "Longitude in degrees, -180…180.")
    var longitude: Double

    func run() async throws {
        let found = try await client.withLoader { [latitude, longitude] in
            try await $0.package(atLatitude: latitude, longitude: longitude)
        }
        guard let package = found else {
            Output.error("no package covers \(latitude), \(longitude)")
            throw ExitCode(4)
        }
        if client.json { return Output.json(package) }
        InfoCommand.print(package)
    }
}
