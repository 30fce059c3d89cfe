import ArgumentParser
import MapLoader

/// `maploader locate <lat> <lon>`: the smallest package covering a point.
struct LocateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "locate",
        abstract: "Find the smallest package whose boundary contains a point.",
        discussion: """
            Coordinates are decimal degrees, latitude first; negative values and a single \
            "lat,lon" argument work as written. Exits 4 when no package covers the point.

            Examples:
              maploader locate 52.52 13.40
              maploader locate 37.77 -122.42
              maploader locate 48.11,-1.68
            """)

    @OptionGroup var client: ClientOptions

    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp("Latitude and longitude: 'LAT LON' or 'LAT,LON'.", valueName: "lat lon"))
    var coordinates: [String] = []

    /// The parsed point.
    var point: (latitude: Double, longitude: Double) {
        get throws {
            let parts = coordinates.count == 1 ? coordinates[0].split(separator: ",").map(String.init) : coordinates
            guard parts.count == 2,
                let latitude = Double(parts[0].trimmingCharacters(in: .whitespaces)),
                let longitude = Double(parts[1].trimmingCharacters(in: .whitespaces)),
                latitude.isFinite, longitude.isFinite
            else {
                throw ValidationError("give a latitude and a longitude in degrees, e.g. 'maploader locate 37.77 -122.42' or '37.77,-122.42'")
            }
            guard (-90...90).contains(latitude), (-180...180).contains(longitude) else {
                throw ValidationError("latitude must be within -90…90 and longitude within -180…180")
            }
            return (latitude, longitude)
        }
    }

    func validate() throws { _ = try point }

    func run() async throws {
        let (latitude, longitude) = try point
        let found = try await client.withLoader { try await $0.package(atLatitude: latitude, longitude: longitude) }
        guard let package = found else {
            let message = "no package covers \(latitude), \(longitude)"
            Output.error(message)
            if client.json { Output.json(ErrorJSON(error: message, exitCode: 4)) }
            throw ExitCode(4)
        }
        if client.json { return Output.json(package) }
        InfoCommand.print(package)
    }
}
