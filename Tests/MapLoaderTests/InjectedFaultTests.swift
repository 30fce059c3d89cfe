import Foundation
import MapPlatform
import MapStore
import MapTestSupport
import SystemPackage
import Testing

@testable import MapLoader

/// File-system faults injected through MapPlatform's seam (``SystemFaults``), for what this
/// machine cannot make happen for real without root or failing hardware: `EXDEV` on a
/// rename, `EIO` on an `fsync`, `EINTR`, and a full disk at an exact write (DiskSpaceTests
/// fill real tmpfs mounts as root). Each fault hits an update of maps on a real data
/// directory: the update fails with an error an app can show and a suggestion, the installed
/// maps are exactly as they were, and the same update goes through once the fault is gone.
@Suite struct InjectedFaultTests {
    struct Fault: Sendable, CustomTestStringConvertible {
        let call: SystemFaults.Call
        let errno: Errno
        /// Calls that go through before the fault.
        let passing: Int

        var testDescription: String { "\(errno) on \(call.rawValue) after \(passing) calls" }

        /// Whether `error` is what this fault should read as.
        func matches(_ error: MapLoaderError) -> Bool {
            switch error {
            case .insufficientSpace: errno == .noSpace
            case .storageFailed(_, let reason): reason == errno.description
            default: false
            }
        }
    }

    static let faults: [Fault] = [
        Fault(call: .write, errno: .noSpace, passing: 0),
        Fault(call: .write, errno: .noSpace, passing: 12),
        Fault(call: .write, errno: .ioError, passing: 5),
        Fault(call: .rename, errno: .improperLink, passing: 0),
        Fault(call: .rename, errno: .improperLink, passing: 2),
        Fault(call: .fsync, errno: .ioError, passing: 0),
        Fault(call: .fsync, errno: .ioError, passing: 3),
    ]

    /// A device with de-berlin and de-hamburg at v1, and v2 published.
    func device() async throws -> (TestSite, MapLoader, URL) {
        let site = try TestSite(revisions: [1])
        let data = site.dir.path("data")
        let loader = site.loader(dataDirectory: data)
        try await loader.install(["de-berlin", "de-hamburg"])
        try site.publish(2)
        return (site, loader, data)
    }

    @Test(arguments: faults)
    func aFaultDuringAnUpdateLeavesTheMapsAsTheyWere(_ fault: Fault) async throws {
        let (site, loader, data) = try await device()
        defer { withExtendedLifetime(site) {} }
        let before = try snapshot(loader.currentFolder)
        let armed = SystemFaults.inject(.init(fault.call, under: data.path, errno: fault.errno, passing: fault.passing))
        do {
            let report = try await loader.performUpdate()
            Issue.record("the update went through \(fault.testDescription): \(report)")
        } catch {
            #expect(fault.matches(error), "\(error)")
            #expect(SystemFaults.fired(armed) >= 1)
            #expect(!error.description.contains("\n") && error.recoverySuggestion?.isEmpty == false, "\(error)")
        }
        SystemFaults.remove(armed)
        #expect(try snapshot(loader.currentFolder) == before, "the installed maps changed")
        #expect(try await loader.verify().ok)
        let report = try await loader.performUpdate()
        #expect(report.committed)
        #expect(try await loader.verify().ok)
    }

    /// `EINTR` from writes and flushes is retried at once, as the real calls are: the update
    /// goes through as if nothing happened. (Twenty in a row: more than the download's own
    /// retries would absorb if a write gave up on them.)
    @Test func interruptedCallsAreRetried() async throws {
        let (site, loader, data) = try await device()
        defer { withExtendedLifetime(site) {} }
        let rules: [SystemFaults.Rule] = [
            .init(.write, under: data.path, errno: .interrupted, passing: 3, times: 20),
            .init(.fsync, under: data.path, errno: .interrupted, passing: 0, times: 5),
        ]
        let (report, fired) = try await SystemFaults.with(rules) { try await loader.performUpdate() }
        #expect(fired == [20, 5], "each interruption was met")
        #expect(report.committed)
        #expect(try await loader.verify().ok)
    }

    /// Once `current` is renamed, the new generation is live: a flush of the folder that
    /// fails after it (twice) does not make the switch a failure, which would tell an app
    /// its update failed while its maps changed.
    @Test func aFlushThatFailsAfterTheSwitchDoesNotFailIt() throws {
        let dir = TemporaryDirectory()
        let directory = DataDirectory(dir.path("data"))
        for number in [1, 2] { try FileManager.default.createDirectory(at: directory.generation(number), withIntermediateDirectories: true) }
        let pointer = CurrentPointer(directory)
        try pointer.switchTo(1)
        let armed = SystemFaults.inject(.init(.fsync, under: directory.root.path, errno: .ioError))
        defer { SystemFaults.remove(armed) }
        try pointer.switchTo(2)
        #expect(pointer.generation() == 2)
        #expect(SystemFaults.fired(armed) == 2, "the folder's flush was tried twice")
    }

    /// The seam applies under its folder only: a fault under another test's folder leaves
    /// this one's calls alone.
    @Test func aFaultStaysInItsFolder() async throws {
        let (site, loader, _) = try await device()
        defer { withExtendedLifetime(site) {} }
        let elsewhere = site.dir.path("elsewhere")
        let (report, fired) = try await SystemFaults.with([.init(.write, under: elsewhere.path, errno: .noSpace)]) {
            try await loader.performUpdate()
        }
        #expect(report.committed && fired == [0])
    }
}
