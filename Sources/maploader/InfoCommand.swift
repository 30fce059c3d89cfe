import ArgumentParser
import Foundation
import MapLoader
import MapModel

/// `maploader info <id>`: one package in detail.
struct InfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info", abstract: "Show one package: state, sizes, groups, box, metadata and your tags.")

    @OptionGroup var client: ClientOptions

    @Argument(help: "The package id, e.g. de-berlin.")
    var id: String

    func run() async throws {
        let package = try await client.withLoader { [id] in try await $0.package(id) }
        if client.json { return Output.json(package) }
        InfoCommand.print(package)
    }

    static func print(_ package: PackageStatus) {
        var rows = [
            ["id", package.id], ["title", package.title], ["state", package.state.description],
            ["kind", package.isLeaf ? "leaf" : "inner node"], ["parent", package.parent ?? "-"],
            ["version", package.version ?? "-"], ["download", ByteFormat.string(package.downloadSize)],
            ["on disk", ByteFormat.string(package.sizeOnDisk)],
        ]
        if package.isLeaf {
            let offered = package.offered.map { offer in
                let state = offer.installed ? "installed" : offer.selected ? "selected" : "not selected"
                return "\(offer.id) \(ByteFormat.string(offer.downloadSize)) (\(state))"
            }
            rows.append(["groups", offered.isEmpty ? "-" : offered.joined(separator: ", ")])
        }
        if let box = package.bbox { rows.append(["bbox", "\(box.minLon), \(box.minLat), \(box.maxLon), \(box.maxLat)"]) }
        if let metadata = package.metadata, let data = try? JSONCoding.encoder(pretty: false).encode(metadata) {
            rows.append(["metadata", String(decoding: data, as: UTF8.self)])
        }
        if !package.tags.isEmpty {
            rows.append(["tags", package.tags.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")])
        }
        Output.table(rows)
    }
}
