import MapDelta
import MapModel
import MapPlatform

/// Serializes a ``PatchManifest`` into the binary form described in ``PatchFormat``.
/// It does not validate: the builder only feeds it checked trees, and tests use it to
/// craft hostile containers.
package enum PatchManifestEncoder {
    /// The manifest's bytes in manifest form `form` (1 to 3, see ``PatchFormat``), before
    /// compression. Forms 2 and 3 write the sources' digests the manifest has (the builder
    /// leaves out those of small files); form 2 writes the manifest's tree hash, or when it
    /// has none, the tree hash of its targets (a missing digest counted as zeros), and no
    /// digest for unchanged targets; form 3 writes the tree hash where the manifest has one,
    /// does not list unchanged targets and writes the produced files' digests it has.
    package static func encode(_ manifest: PatchManifest, form: Int = PatchFormat.currentForm) -> [UInt8] {
        let lean = form >= 2
        let listsChangesOnly = form >= 3
        var out: [UInt8] = []
        if listsChangesOnly {
            out += manifest.treeHash.map { [1] + $0.bytes } ?? [0]
        } else if lean {
            out += manifest.treeHash?.bytes ?? treeHash(of: manifest).bytes
        }
        func digest(_ digest: SHA256Hash?) {
            switch (lean, digest) {
            case (true, nil): out.append(0)
            case (true, let digest?): out += [1] + digest.bytes
            case (false, let digest): out += (digest ?? zero).bytes
            }
        }
        func produced(_ sha256: SHA256Hash?) {
            if listsChangesOnly { digest(sha256) } else { out += (sha256 ?? zero).bytes }
        }
        varint(Int64(manifest.sources.count), &out)
        for source in manifest.sources {
            string(source.path, &out)
            digest(source.sha256)
        }
        let listed = listsChangesOnly ? manifest.targets.filter { $0.origin != .unchanged } : manifest.targets
        varint(Int64(listed.count), &out)
        for target in listed {
            string(target.path, &out)
            varint(target.size, &out)
            switch target.origin {
            case .unchanged:
                out.append(0)
                if !lean { out += (target.sha256 ?? zero).bytes }
            case .copy(let source):
                out.append(1)
                varint(Int64(source), &out)
            case .add(let payload):
                out.append(2)
                produced(target.sha256)
                out.append(payload.encoding.rawValue)
                varint(payload.length, &out)
            case .patch(let source, let payload):
                out.append(3)
                produced(target.sha256)
                varint(Int64(source), &out)
                out.append(payload.encoding.rawValue)
                varint(payload.length, &out)
            }
        }
        varint(Int64(manifest.deletions.count), &out)
        for path in manifest.deletions { string(path, &out) }
        return out
    }

    /// The tree hash of `manifest`'s targets.
    package static func treeHash(of manifest: PatchManifest) -> SHA256Hash {
        let hex = TreeHash.of(manifest.targets.map { FileEntry(path: $0.path, size: $0.size, sha256: ($0.sha256 ?? zero).hex) })
        return SHA256Hash(hex: hex) ?? zero
    }

    private static let zero = SHA256Hash(bytes: [UInt8](repeating: 0, count: 32))!

    /// Appends an unsigned LEB128 varint.
    package static func varint(_ value: Int64, _ out: inout [UInt8]) {
        ByteReader.appendVarint(UInt64(bitPattern: value), to: &out)
    }

    private static func string(_ s: String, _ out: inout [UInt8]) {
        varint(Int64(s.utf8.count), &out)
        out += s.utf8
    }
}
