import Foundation
import MapDelta
import MapModel
import MapPlatform
import MapTestSupport
import SystemPackage
import Testing

/// `MapLoaderError(_:)`, the one place an error of a lower layer becomes what an app shows:
/// each layer's error, made for real where it can be, becomes the case its type says. Without
/// a type's conformance the row falls to the catch-all (a storage failure with no path) and
/// fails here.
@Suite struct ErrorConversionTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let error: @Sendable () async throws -> any Error
        let expected: @Sendable (MapLoaderError) -> Bool
    }

    static let rows: [Row] = [
        Row(
            testDescription: "a full disk", error: { SystemError("write", "/maps/a.bin", .noSpace) },
            expected: { if case .insufficientSpace(_, _, "/maps/a.bin", _) = $0 { true } else { false } }),
        Row(
            testDescription: "a rename across file systems", error: { SystemError("rename", "/maps/current", .improperLink) },
            expected: { $0 == .storageFailed(path: "/maps/current", reason: Errno.improperLink.description) }),
        Row(
            testDescription: "a lock another holder has",
            error: {
                let folder = TemporaryDirectory("lock")
                let path = folder.path("lock").path
                let held = try await FileLock.acquire(path, .exclusive, wait: false, onWait: { _ in })
                defer { withExtendedLifetime(held) {} }
                do {
                    _ = try await FileLock.acquire(path, .exclusive, wait: false, onWait: { _ in })
                } catch {
                    return error
                }
                return CancellationError()
            },
            expected: { if case .busy = $0 { true } else { false } }),
        Row(
            testDescription: "a link in a folder of map files",
            error: {
                let folder = TemporaryDirectory("tree")
                try FileManager.default.createSymbolicLink(atPath: folder.path("link").path, withDestinationPath: "/etc/passwd")
                do { _ = try FileTree.files(in: folder.url) } catch { return error }
                return CancellationError()
            },
            expected: { if case .integrityFailed("a folder of map files", let detail) = $0 { detail.contains("link") } else { false } }),
        Row(
            testDescription: "a zstd frame that does not decompress",
            error: {
                do { _ = try ZstdFrame.decompress([1, 2, 3, 4, 5, 6, 7, 8], limit: 100) } catch { return error }
                return CancellationError()
            },
            expected: { if case .invalidMetadata("a compressed metadata file", _) = $0 { true } else { false } }),
        Row(
            testDescription: "JSON that does not decode",
            error: {
                do { _ = try JSONCoding.decode(Catalog.self, from: Data("{}".utf8)) } catch { return error }
                return CancellationError()
            },
            expected: { if case .invalidMetadata("a metadata file", _) = $0 { true } else { false } }),
        Row(
            testDescription: "a refused root", error: { RootRefusal("version 3 is not signed by 2 of the previous root's keys") },
            expected: { if case .signatureRefused(let reason) = $0 { reason.contains("version 3") } else { false } }),
        Row(
            testDescription: "a patch that is not one", error: { PatchError.notAPatch(path: "/tmp/p") },
            expected: { if case .integrityFailed("a patch", let detail) = $0 { detail.contains("/tmp/p") } else { false } }),
        Row(
            testDescription: "a Foundation file error",
            error: {
                do { _ = try Data(contentsOf: URL(fileURLWithPath: "/nonexistent/maps/a.bin")) } catch { return error }
                return CancellationError()
            },
            expected: { $0 == .storageFailed(path: "/nonexistent/maps/a.bin", reason: Errno.noSuchFileOrDirectory.description) }),
        Row(
            testDescription: "a decoding error",
            error: {
                do { _ = try JSONDecoder().decode([Int].self, from: Data("{}".utf8)) } catch { return error }
                return CancellationError()
            },
            expected: { if case .invalidMetadata = $0 { true } else { false } }),
        Row(testDescription: "a cancellation", error: { CancellationError() }, expected: { $0 == .cancelled }),
    ]

    @Test(arguments: rows)
    func eachLayersErrorBecomesWhatItMeans(_ row: Row) async throws {
        let error = try await row.error()
        let converted = MapLoaderError(error)
        #expect(row.expected(converted), "\(type(of: error)) \(error) became \(converted)")
    }
}
