package import Foundation
package import MapModel
import MapPlatform

/// Which parts of a split manifest an operation reads.
package enum ManifestParts: Sendable, Equatable {
    /// Every part: listing, installing by name.
    case all
    /// The parts holding these packages (an update of what is installed, one package's
    /// status). Where each package is comes from the cached parts of manifests already
    /// read (``SiteClient/manifest(_:in:parts:knownFrom:)``); parts are read until every
    /// package is found.
    case holding(Set<String>)
    /// The parts whose bounds contain this point (locating).
    case around(latitude: Double, longitude: Double)
}

extension SiteClient {
    /// `index` with the stubs it needs replaced by their parts, each fetched once (then
    /// cached by hash) and checked against the index's pin. Stubs not needed stay stubs.
    func resolve(_ index: Manifest, parts: ManifestParts, knownFrom: [String]) async throws(MapLoaderError) -> Manifest {
        let stubs = index.stubs
        guard !stubs.isEmpty else { return index }
        var resolved: [String: PackageNode] = [:]
        switch parts {
        case .all:
            resolved = try await fetchParts(stubs)
        case .holding(let packages):
            var whereabouts: [String: String] = [:]
            for sha in knownFrom { whereabouts.merge(Self.partOfPackage(index: sha, in: cache)) { first, _ in first } }
            var wanted = Set(packages.compactMap { whereabouts[$0] })
            // A package of the index itself needs every part below it.
            for node in index.root.allNodes where packages.contains(node.id) { wanted.formUnion(node.stubs.map(\.id)) }
            resolved = try await fetchParts(stubs.filter { wanted.contains($0.id) })
            let found = Set(resolved.values.flatMap { $0.allNodes.map(\.id) } + index.root.allNodes.map(\.id))
            if !packages.isSubset(of: found) {
                // Moved, new, or the cache lost track: read the rest too.
                resolved.merge(try await fetchParts(stubs.filter { resolved[$0.id] == nil })) { first, _ in first }
            }
        case .around(let latitude, let longitude):
            resolved = try await fetchParts(
                stubs.filter {
                    $0.part!.bounds?.contains(lat: latitude, lon: longitude) ?? true
                })
            // The node found must be whole (its state sums its leaves): read what is below it.
            if let found = Locator.smallestNode(containing: latitude, longitude, in: index.root.replacingStubs(resolved)) {
                resolved.merge(try await fetchParts(found.stubs)) { first, _ in first }
            }
        }
        var manifest = index
        manifest.root = index.root.replacingStubs(resolved)
        return manifest
    }

    /// The parts of `stubs`, fetched up to eight at a time.
    private func fetchParts(_ stubs: [PackageNode]) async throws(MapLoaderError) -> [String: PackageNode] {
        let client = self
        var parts: [String: PackageNode] = [:]
        var next = 0
        while next < stubs.count {
            let batch = stubs[next..<min(next + 8, stubs.count)]
            next += batch.count
            let results = await withTaskGroup(of: Result<PackageNode, MapLoaderError>.self) { group in
                for stub in batch {
                    group.addTask {
                        do throws(MapLoaderError) {
                            return .success(try await client.part(stub))
                        } catch {
                            return .failure(error)
                        }
                    }
                }
                var results: [Result<PackageNode, MapLoaderError>] = []
                for await result in group { results.append(result) }
                return results
            }
            for result in results {
                let node = try result.get()
                parts[node.id] = node
            }
        }
        return parts
    }

    /// One part: from the cache, else fetched and checked against the stub's pin.
    func part(_ stub: PackageNode) async throws(MapLoaderError) -> PackageNode {
        guard let pin = stub.part else { return stub }
        let path = SiteLayout.blob(pin.sha256)
        let cache = self.cache
        var data = await Self.offPool { Self.cachedData(pin.sha256, in: cache) } ?? nil
        if data == nil {
            let fetched = try await source.fetchPinned(path, size: pin.size, sha256: pin.sha256, pinnedBy: "manifest", scratch: scratch)
            _ = await Self.offPool {
                try? FileSystem.makeDirectories(cache)
                try? fetched.write(to: cache.appendingPathComponent(pin.sha256), options: .atomic)
            }
            data = fetched
        }
        let bytes = data!
        let node: PackageNode
        switch await Self.offPool({ Result { () throws(JSONProblem) in try Manifest.decodePart(bytes) } }) {
        case .success(let decoded)?: node = decoded
        case .failure(let error)?: throw .invalidMetadata(what: source.describe(path), detail: error.description)
        case nil: throw .cancelled
        }
        guard node.id == stub.id, node.stubs.isEmpty else {
            throw .invalidMetadata(what: source.describe(path), detail: "it is not the part '\(stub.id)' the manifest names")
        }
        // Which packages the part holds, for the next update's choice of parts.
        let ids = cache.appendingPathComponent(pin.sha256 + ".ids")
        if FileStatus.of(ids.path) == nil {
            try? Data(node.allNodes.map(\.id).joined(separator: "\n").utf8).write(to: ids, options: .atomic)
        }
        return node
    }

    /// Package id → the stub id of the part holding it, as the cached parts of the
    /// manifest `index` say.
    static func partOfPackage(index: String, in cache: URL) -> [String: String] {
        guard let data = cachedData(index, in: cache), let index = try? Manifest.decode(data) else { return [:] }
        var whereabouts: [String: String] = [:]
        for stub in index.stubs {
            guard let text = try? String(contentsOf: cache.appendingPathComponent(stub.part!.sha256 + ".ids"), encoding: .utf8)
            else { continue }
            for id in text.split(separator: "\n") { whereabouts[String(id)] = stub.id }
        }
        return whereabouts
    }

    /// The whole manifest `sha256` from the cache alone (its parts too, each checked against
    /// its pin), or `nil` when anything is missing there.
    /// - Parameter partial: keep the subtrees whose parts are cached and drop the others
    ///   (an offline listing: the parts holding installed packages are always cached),
    ///   instead of returning `nil`.
    package static func cachedManifest(_ sha256: String, in cache: URL, partial: Bool = false) -> Manifest? {
        guard let data = cachedData(sha256, in: cache), var manifest = try? Manifest.decode(data) else { return nil }
        var parts: [String: PackageNode] = [:]
        for stub in manifest.stubs {
            guard let bytes = cachedData(stub.part!.sha256, in: cache), let node = try? Manifest.decodePart(bytes),
                node.id == stub.id
            else {
                if partial { continue }
                return nil
            }
            parts[stub.id] = node
        }
        manifest.root = manifest.root.replacingStubs(parts)
        if partial { manifest.root = manifest.root.droppingStubs() }
        return manifest
    }

    /// The cache entries the manifest `sha256` needs (itself, its parts and their package
    /// lists), which garbage collection keeps.
    package static func cacheEntries(ofManifest sha256: String, in cache: URL) -> Set<String> {
        var names: Set<String> = [sha256]
        guard let data = cachedData(sha256, in: cache), let index = try? Manifest.decode(data) else { return names }
        for stub in index.stubs { names.formUnion([stub.part!.sha256, stub.part!.sha256 + ".ids"]) }
        return names
    }
}
