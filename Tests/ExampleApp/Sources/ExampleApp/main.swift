import Foundation
import MapLoader

// What an offline-map app does with MapLoader, through its public API only:
//   example-app online  SERVER DATA-DIR KEY   list, install with progress, pause and resume, an error alert
//   example-app update  SERVER DATA-DIR KEY   check for an update and apply it with progress
//   example-app offline SERVER DATA-DIR KEY   the server is gone: list what is installed
// Prints what an app would show; exits 1 on anything unexpected.

/// The app's delegate: a log line per finished operation. The loader holds it weakly, so
/// the app keeps it (here in a global).
final class AppDelegate: MapLoaderDelegate {
    func mapLoader(_ loader: MapLoader, didInstallPackages ids: [String]) { print("delegate: installed \(ids.joined(separator: ", "))") }
    func mapLoader(_ loader: MapLoader, didUpdate report: UpdateReport) { print("delegate: \(report)") }
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

let arguments = CommandLine.arguments
guard arguments.count == 5, let key = TrustPolicy.Key(base64: arguments[4]) else {
    fail("usage: example-app online|update|offline SERVER DATA-DIR KEY")
}
let loader = MapLoader(
    configuration: .init(
        server: arguments[2], dataDirectory: URL(fileURLWithPath: arguments[3]),
        trust: TrustPolicy(keys: [key])),
    delegate: appDelegate)

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
    default:
        fail("unknown mode \(arguments[1])")
    }
} catch {
    fail("\(error.localizedDescription)")
}
