import ArgumentParser
import Foundation
import MapLoader

/// `maploader coverage`.
struct CoverageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coverage",
        abstract: "Write where the maps are, and what this device has of them, as GeoJSON or an SVG map.",
        discussion: """
            One shape per leaf package: its published boundary, or its box. GeoJSON \
            (RFC 7946) carries id, title, state, version, installed groups, sizes, metadata \
            and tags as properties and opens as is in geojson.io, QGIS or any map library. \
            The SVG is a world map with installed, partly installed, updatable, damaged and \
            missing packages in distinct colours and a legend. Use - as FILE for stdout.

            Examples:
              maploader coverage --geojson coverage.geojson --svg coverage.svg
              maploader coverage --installed --geojson -
            """)

    @OptionGroup var client: ClientOptions

    @Flag(name: .long, help: "Only packages of which something is installed.")
    var installed = false

    @Option(name: .long, help: ArgumentHelp("Write GeoJSON here.", valueName: "file"))
    var geojson: String?

    @Option(name: .long, help: ArgumentHelp("Write an SVG world map here.", valueName: "file"))
    var svg: String?

    @Option(name: .long, help: "Width of the SVG in pixels.")
    var width = 1200

    func validate() throws {
        guard geojson != nil || svg != nil else { throw ValidationError("name an output: --geojson FILE and/or --svg FILE") }
        guard (200...20_000).contains(width) else { throw ValidationError("--width must be within 200...20000") }
    }

    func run() async throws {
        let coverage = try await client.withLoader { [installed] in try await $0.coverage(installedOnly: installed) }
        var written: [String] = []
        let outputs = [geojson.map { ($0, coverage.geoJSON()) }, svg.map { ($0, Data(coverage.svg(width: width).utf8)) }]
        for case (let path, let data)? in outputs {
            do {
                try write(data, to: path)
            } catch {
                throw Failure(
                    error: .storageFailed(path: path, reason: "cannot write the coverage file (\(error.localizedDescription))"),
                    json: client.json
                ).exit()
            }
            written.append(path)
        }
        let files = written.filter { $0 != "-" }
        guard !files.isEmpty else { return }
        if client.json { return Output.json(["areas": coverage.areas.count, "files": files.count]) }
        Output.error("wrote \(coverage.areas.count) package area(s) to \(files.joined(separator: " and "))")
    }

    private func write(_ data: Data, to path: String) throws {
        if path == "-" { return FileHandle.standardOutput.write(data) }
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
