import Foundation
import MapTestSupport
import Observation
import Synchronization
import Testing

@testable import MapLoader

/// The observable model an app binds to: its state follows an install, a pause, an update
/// and a failure, observed as SwiftUI and UIKit observe it (`withObservationTracking`).
@MainActor @Suite struct ModelTests {
    /// Counts the changes of `read`'s properties, re-arming after each (as a view re-renders).
    final class Watcher: Sendable {
        let changes = Atomic<Int>(0)

        @MainActor func watch(_ read: @escaping @MainActor () -> Void) {
            withObservationTracking {
                read()
            } onChange: { [self] in
                changes.add(1, ordering: .relaxed)
                Task { @MainActor in self.watch(read) }
            }
        }
    }

    @Test func theModelFollowsAnInstallAPauseAnUpdateAndAFailure() async throws {
        // A slow server, so the install is surely downloading when the model pauses it.
        let site = try TestSite(faults: FaultPlan(bytesPerSecond: 40_000))
        let model = MapLoaderModel(loader: site.loader())
        await model.refresh()
        #expect(model.packages["de-berlin"]?.state == .notInstalled)
        let states = model.states(of: "de-berlin")
        let followed = Task { () -> [PackageStatus.State] in
            var seen: [PackageStatus.State] = []
            for await status in states {
                seen.append(status.state)
                if status.state == .installed { break }
            }
            return seen
        }
        let watcher = Watcher()
        watcher.watch { _ = (model.activity, model.packages) }

        let install = Task { await model.install(["de-berlin"]) }
        var paused = false
        var sawProgress = false
        while model.activity != nil || !paused {
            if let activity = model.activity, activity.phase == .download, !paused {
                model.pause()
                paused = true
                #expect(model.activity?.isPaused == true)
                try await Task.sleep(for: .milliseconds(300))
                model.resume()
            }
            if (model.activity?.fraction ?? 0) > 0 { sawProgress = true }
            try await Task.sleep(for: .milliseconds(5))
        }
        await install.value
        #expect(paused && sawProgress)
        #expect(model.lastError == nil, "\(String(describing: model.lastError))")
        #expect(model.activity == nil)
        #expect(model.packages["de-berlin"]?.state == .installed)
        #expect(await followed.value == [.notInstalled, .installed])
        #expect(watcher.changes.load(ordering: .relaxed) > 3, "\(watcher.changes.load(ordering: .relaxed)) changes observed")

        try site.publish(2)
        await model.checkForUpdate()
        #expect(model.updateCheck?.updateAvailable == true)
        await model.update()
        #expect(model.lastError == nil)
        #expect(model.packages["de-berlin"]?.version == "v2")
        #expect(model.updateCheck == nil)

        await model.install(["atlantis"])
        guard case .unknownPackage("atlantis", _) = model.lastError else {
            Issue.record("\(String(describing: model.lastError))")
            return
        }
        #expect(model.activity == nil && model.packages["de-berlin"]?.version == "v2")
    }

    /// The article's snippet: a pause right after `Task { await model.install(…) }`, before
    /// the install has begun, holds it (it starts paused) until the resume.
    @Test func aPauseBeforeTheOperationBeginsHoldsIt() async throws {
        let site = try TestSite()
        let model = MapLoaderModel(loader: site.loader())
        await model.refresh()
        let install = Task { await model.install(["de-berlin"]) }
        model.pause()
        while model.activity == nil { try await Task.sleep(for: .milliseconds(5)) }
        #expect(model.activity?.isPaused == true)
        // Held: half a second later nothing is installed and the operation still runs.
        try await Task.sleep(for: .milliseconds(500))
        #expect(model.activity != nil && model.packages["de-berlin"]?.state == .notInstalled)
        model.resume()
        await install.value
        #expect(model.lastError == nil, "\(String(describing: model.lastError))")
        #expect(model.packages["de-berlin"]?.state == .installed)
    }
}
