// swift-tools-version: 6.1
import PackageDescription

// An app's view of MapLoader: a separate package that depends on it by path, so it sees
// only the public API (no `package` symbols, no @testable). Built and run by
// scripts/example-app.sh (part of the test command) against `maploader serve`.
let package = Package(
    name: "ExampleApp",
    platforms: [.macOS(.v15)],
    // The trait an app names picks where MapLoader's zstd comes from: "SystemZstd" (the
    // system's, found with pkg-config: Linux) or "PackagedZstd" (the zstd repository's own
    // package: Xcode and Android builds; scripts/app-build.sh builds that here).
    dependencies: [.package(name: "MapLoader", path: "../..", traits: ["SystemZstd"])],
    targets: [
        .executableTarget(name: "ExampleApp", dependencies: [.product(name: "MapLoader", package: "MapLoader")]),
        // Every Swift example of the README, the DocC articles and the doc comments
        // (scripts/snippets.py), compiled as written; examples leave values unused, hence no warnings.
        .target(
            name: "Snippets", dependencies: [.product(name: "MapLoader", package: "MapLoader")],
            swiftSettings: [.unsafeFlags(["-suppress-warnings"])]),
    ]
)
