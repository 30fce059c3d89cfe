import Foundation
import MapDelta
import MapPlatform

extension PayloadChooser {
    /// A see-through payload for an SQLite database (MBTiles) changed from `basePath`:
    /// both files gathered (``SQLiteOverflow``: each overflow chain put after its cell, so a
    /// gzip'd tile larger than a page is one stream), scanned and diffed as any file of an
    /// unknown container, with the new file's gather map in front, compressed against the
    /// old file's. `nil` when the new file is no database with overflow chains.
    func gatheredSeeThrough(_ newPath: String, basePath: String) throws -> Result<SeeThroughPayload, NoSeeThrough>? {
        let newMap = SQLiteOverflow.map(of: newPath)
        guard !newMap.isIdentity else { return nil }
        let oldMap = SQLiteOverflow.map(of: basePath)
        let oldGathered = workDirectory + "/old.gathered"
        let newGathered = workDirectory + "/new.gathered"
        defer {
            for path in [oldGathered, newGathered] { FileSystem.empty(path) }
        }
        for (map, path, gathered) in [(oldMap, basePath, oldGathered), (newMap, newPath, newGathered)] {
            let input = try SystemFile.openForReading(path)
            try map.gather(input, size: try input.size(), into: try SystemFile.createOrTruncate(gathered))
        }
        let streams = DeflateStreams.scan(in: newGathered)
        guard !streams.isEmpty else { return .failure(NoSeeThrough(description: "no gzip or zlib stream in its gathered pages")) }
        var payload: SeeThroughPayload
        switch try seeThrough(newGathered, streams: streams, basePath: oldGathered, view: .gatheredDeflate) {
        case .failure(let reason): return .failure(reason)
        case .success(let found): payload = found
        }
        let columns = newMap.columns
        guard columns.count <= GatherMap.maxColumnsLength else { return .failure(NoSeeThrough(description: "its gather map is too large")) }
        let frame = try columnFrame(columns, prefix: oldMap.columns)
        let path = workDirectory + "/gathered.payload"
        let out = try SystemFile.createOrTruncate(path)
        try frame.withUnsafeBytes { try out.writeAll($0) }
        try SystemFile.openForReading(payload.path).forEachChunk { try out.writeAll($0) }
        payload.length += Int64(frame.count)
        for index in payload.others.indices { payload.others[index].length += Int64(frame.count) }
        payload.path = path
        return .success(payload)
    }
}
