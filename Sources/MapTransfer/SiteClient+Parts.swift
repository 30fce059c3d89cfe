import Foundation
import MapModel
import MapPlatform

/// Which parts of a split manifest an operation reads.
package enum ManifestParts: Sendable, Equatable {
    /// Every part: listing, locating, installing by name.
    case all
    /// The parts holding these packages (an update of what is installed). Where each
    /// package was is read from the parts of `installedIndex` (the installed version's
    /// manifest hash) in the cache; parts are read until every package is found.
    case holding(Set<String>, installedIndex: String?)
}

extension SiteClient {
    /// `index` with the stubs it needs replaced by their parts, each fetched once (then
    /// cached by hash) and checked against the index's pin. Stubs not needed stay stubs.
    func resolve(_ index: Manifest, parts: ManifestParts) async throws(MapLoaderError) -> Manifest {
        let stubs = index.stubs
        guard !stubs.isEmpty else { return index }
        var resolved: [String: PackageNode] = [:]
        switch parts {
        case .all:
            resolved = try await fetchParts(stubs)
        case let .holding(packages, installedIndex):
            let whereabouts = installedIndex.map { Self.partOfPackage(installedIndex: $0, in: cache) } ?? [:]
            let likely = Set(packages.compactMap { whereabouts[$0] })
            resolved = try await fetchParts(stubs.filter { likely.contains($0.id) })
            let found = Set(resolved.values.flatMap { $0.allNodes.map(\.id) })
            if !packages.isSubset(of: found) {
                // Moved, or the cache lost track: read the rest too.
                resolved.merge(try await fetchParts(stubs.filter { resolved[$0.id] == nil })) { first, _ in first }
            }
        }
        var manifest = index
        manifest.root = index.root.replacingStubs(resolved)
        return manifest
    }

    /// The parts of `stubs`, fetched a few at a time.
    private func fetchParts(_ stubs: [PackageNode]) async throws(MapLoaderError) -> [String: PackageNode] {
        let client = self
        let results = await withTaskGroup(of: (String, Result<PackageNode, MapLoaderError>).self) { group in
            var results: [(String, Result<PackageNode, MapLoaderError>)] = []
            var pending = stubs[...]
            func add() {
                guard let stub = pending.popFirst() else { return }
                group.addTask {
                    do throws(MapLoaderError) {
                        return (stub.id, .success(try await client.part(stub)))
                    } catch {
                        return (stub.id, .failure(error))
                    }
                }
            }
            for _ in 0..<8 { add() }
            while let result = await group.next() {
                results.append(result)
                add()
            }
            return results
        }
        var parts: [String: PackageNode] = [:]
        for (id, result) in results {
            switch result {
            case let .success(node): parts[id] = node
            case let .failure(error): throw error
            }
        }
        return parts
    }

    /// One part: from the cache, else fetched and checked against the stub's pin.
    func part(_ stub: PackageNode) async throws(MapLoaderError) -> PackageNode {
        guard let pin = stub.part else { return stub }
        let path = SiteLayout.blob(pin.sha256)
        var data = Self.cachedData(pin.sha256, in: cache)
        if data == nil {
            let fetched = try await source.fetchData(path, limit: .exactly(pin.size), scratch: scratch)
            let actual = FileHashing.sha256(of: fetched)
            guard actual == pin.sha256 else {
                throw .integrityFailed(what: source.describe(path),
                                       detail: "SHA-256 is \(actual.prefix(12))…, the manifest pins \(pin.sha256.prefix(12))…")
            }
            try? FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
            try? fetched.write(to: cache.appendingPathComponent(pin.sha256), options: .atomic)
            data = fetched
        }
        let node: PackageNode
        do {
            node = try Manifest.decodePart(data!)
        } catch {
            throw .invalidMetadata(what: source.describe(path), detail: error.description)
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
    /// manifest `installedIndex` say.
    static func partOfPackage(installedIndex: String, in cache: URL) -> [String: String] {
        guard let data = cachedData(installedIndex, in: cache), let index = try? Manifest.decode(data) else { return [:] }
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
    package static func cachedManifest(_ sha256: String, in cache: URL) -> Manifest? {
        guard let data = cachedData(sha256, in: cache), var manifest = try? Manifest.decode(data) else { return nil }
        var parts: [String: PackageNode] = [:]
        for stub in manifest.stubs {
            guard let bytes = cachedData(stub.part!.sha256, in: cache), let node = try? Manifest.decodePart(bytes),
                  node.id == stub.id else { return nil }
            parts[stub.id] = node
        }
        manifest.root = manifest.root.replacingStubs(parts)
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
