import MapDelta
import MapModel
import MapPlatform

/// Serializes a ``PatchManifest`` into the binary form described in ``PatchFormat``.
/// It does not validate: the builder only feeds it checked trees, and tests use it to
/// craft hostile containers.
package enum PatchManifestEncoder {
    /// The manifest's bytes, before compression.
    package static func encode(_ manifest: PatchManifest) -> [UInt8] {
        var out: [UInt8] = []
        varint(Int64(manifest.sources.count), &out)
        for source in manifest.sources {
            string(source.path, &out)
            out += source.sha256.bytes
        }
        varint(Int64(manifest.targets.count), &out)
        for target in manifest.targets {
            string(target.path, &out)
            varint(target.size, &out)
            switch target.origin {
            case .unchanged:
                out.append(0)
                out += target.sha256.bytes
            case .copy(let source):
                out.append(1)
                varint(Int64(source), &out)
            case .add(let payload):
                out.append(2)
                out += target.sha256.bytes
                out.append(payload.encoding.rawValue)
                varint(payload.length, &out)
            case .patch(let source, let payload):
                out.append(3)
                out += target.sha256.bytes
                varint(Int64(source), &out)
                out.append(payload.encoding.rawValue)
                varint(payload.length, &out)
            }
        }
        varint(Int64(manifest.deletions.count), &out)
        for path in manifest.deletions { string(path, &out) }
        return out
    }

    /// Appends an unsigned LEB128 varint.
    package static func varint(_ value: Int64, _ out: inout [UInt8]) {
        ByteReader.appendVarint(UInt64(bitPattern: value), to: &out)
    }

    private static func string(_ s: String, _ out: inout [UInt8]) {
        varint(Int64(s.utf8.count), &out)
        out += s.utf8
    }
}
