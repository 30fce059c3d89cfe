import Foundation
import MapLoader
import Observation

// What an offline-map app does with MapLoader, through its public API only:
//   example-app online  SERVER DATA-DIR KEY   list, install with progress, pause and resume, an error alert
//   example-app update  SERVER DATA-DIR KEY   check for an update and apply it with progress
//   example-app offline SERVER DATA-DIR KEY   the server is gone: list what is installed
//   example-app model   SERVER DATA-DIR KEY   the same through the observable model alone: install
//                                             de-hamburg (paused and resumed), then update if one is due
// Prints what an app would show; exits 1 on anything unexpected.

/// The app's delegate: a log line per finished operation. The loader holds it weakly, so
/// the app keeps it (here in a global).
final class AppDelegate: MapLoaderDelegate {
    func mapLoader(_ loader: MapLoader, didReceive event: MapLoaderEvent) {
        switch event {
        case .installed(let ids): print("delegate: installed \(ids.joined(separator: ", "))")
        case .updated(let report): print("delegate: \(report)")
        default: break
        }
    }
}

let appDelegate = AppDelegate()

func fail(_ message: String) -> Never {
    print("UNEXPECTED: \(message)")
    exit(1)
}

/// A text progress bar, redrawn at every tenth; checks the fraction never goes back.
func drive(_ progress: AsyncStream<OperationProgress>, label: String) async {
    var last = -1.0
    var shownTenth = -1
    for await value in progress {
        if value.overallFraction < last { fail("\(label) progress went back from \(last) to \(value.overallFraction)") }
        last = value.overallFraction
        let tenth = Int(value.overallFraction * 10)
        if tenth > shownTenth {
            shownTenth = tenth
            let bar = String(repeating: "#", count: tenth) + String(repeating: ".", count: 10 - tenth)
            print("\(label) [\(bar)] \(Int(value.overallFraction * 100))% \(value.phase.rawValue) \(value.item ?? "")")
        }
    }
    if last != 1 { fail("\(label) progress ended at \(last)") }
}

func showTree(_ loader: MapLoader) async throws {
    let tree = try await loader.packageTree()
    if let offline = tree.offline {
        print("offline: \(offline.reason)")
    }
    for package in tree.packages where package.isLeaf {
        print("  \(package.id): \(package.state)")
    }
}

/// Changes a view bound to the model would have re-rendered on.
@MainActor enum Observed {
    static var changes = 0
}

/// A screen's worth of state from the model alone: what a SwiftUI view would read, observed
/// as a view is (`withObservationTracking`, re-armed after each change).
@MainActor func watch(_ model: MapLoaderModel) {
    withObservationTracking {
        _ = model.activity?.fraction
        _ = model.activity?.isPaused
        _ = model.packages["de-hamburg"]?.state
    } onChange: {
        Task { @MainActor in
            Observed.changes += 1
            watch(model)
        }
    }
}

@MainActor func driveModel(_ model: MapLoaderModel) async throws {
    await model.refresh()
    watch(model)
    print("model: de-hamburg \(model.packages["de-hamburg"]?.state.rawValue ?? "unknown")")
    if model.packages["de-hamburg"]?.state == .notInstalled {
        let install = Task { await model.install(["de-hamburg"]) }
        while model.activity?.phase != .download {
            if model.lastError != nil || model.packages["de-hamburg"]?.state == .installed { fail("the install did not download") }
            try await Task.sleep(for: .milliseconds(2))
        }
        model.pause()  // the user started navigation
        print("model: paused \(model.activity?.isPaused == true) at \(Int((model.activity?.fraction ?? 0) * 100))%")
        try await Task.sleep(for: .milliseconds(200))
        model.resume()
        await install.value
        if let error = model.lastError { fail("model install: \(error.technicalDetail)") }
        print("model: de-hamburg \(model.packages["de-hamburg"]?.state.rawValue ?? "unknown")")
    }
    await model.checkForUpdate()
    if let error = model.lastError { fail("model check: \(error.technicalDetail)") }
    if model.updateCheck?.updateAvailable == true {
        await model.update()
        if let error = model.lastError { fail("model update: \(error.technicalDetail)") }
        print("model: updated to \(model.packages["de-hamburg"]?.version ?? "?")")
    } else {
        print("model: up to date at \(model.packages["de-hamburg"]?.version ?? "?")")
    }
    if Observed.changes == 0 { fail("the model changed nothing a view observes") }
    print("model: a bound view would have re-rendered \(Observed.changes > 10 ? "more than 10" : "\(Observed.changes)") times")
}

let arguments = CommandLine.arguments
guard arguments.count == 5, let key = TrustPolicy.Key(base64: arguments[4]) else {
    fail("usage: example-app online|update|offline|model SERVER DATA-DIR KEY")
}
let loader = MapLoader(
    configuration: .init(
        server: arguments[2], dataDirectory: URL(fileURLWithPath: arguments[3]),
        trust: TrustPolicy(keys: [key])),
    weakDelegate: appDelegate)

do {
    switch arguments[1] {
    case "online":
        print("maps on the server:")
        try await showTree(loader)
        let install = loader.start { try await $0.install(["de-berlin"]) }
        let bar = Task { await drive(install.progress, label: "install") }
        install.pause()  // the user started navigation
        print("paused: \(install.isPaused)")
        try await Task.sleep(for: .milliseconds(200))
        install.resume()
        _ = try await install.value
        await bar.value
        print("installed; the tree now:")
        try await showTree(loader)
        do {
            try await loader.install(["atlantis"])
            fail("an unknown package installed")
        } catch {
            print("alert: \(error.localizedDescription)")
        }
    case "update":
        let check = try await loader.checkForUpdate()
        print("update available: \(check.updateAvailable), \(check.plan)")
        let update = loader.start { try await $0.performUpdate() }
        let bar = Task { await drive(update.progress, label: "update") }
        let report = try await update.value
        await bar.value
        print("report: \(report)")
    case "offline":
        try await showTree(loader)
        let here = try await loader.package(atLatitude: 52.52, longitude: 13.40)
        print("at 52.52, 13.40: \(here?.id ?? "nothing installed")")
        do {
            try await loader.install(["de-hamburg"])
            fail("installed without a server")
        } catch {
            print("alert: \(error.localizedDescription)")
        }
    case "model":
        try await driveModel(MapLoaderModel(loader: loader))
    default:
        fail("unknown mode \(arguments[1])")
    }
} catch {
    fail("\(error.localizedDescription)")
}
