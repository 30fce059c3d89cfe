// swift-tools-version: 6.0
import PackageDescription

// An app's view of MapLoader: a separate package that depends on it by path, so it sees
// only the public API (no `package` symbols, no @testable). Built and run by
// scripts/example-app.sh (part of the test command) against `maploader serve`.
let package = Package(
    name: "ExampleApp",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "MapLoader", path: "../..")],
    targets: [
        .executableTarget(name: "ExampleApp", dependencies: [.product(name: "MapLoader", package: "MapLoader")]),
        // Every Swift example of the README, the DocC articles and the doc comments
        // (scripts/snippets.py), compiled as written; examples leave values unused, hence no warnings.
        .target(
            name: "Snippets", dependencies: [.product(name: "MapLoader", package: "MapLoader")],
            swiftSettings: [.unsafeFlags(["-suppress-warnings"])]),
    ]
)
