// swift-tools-version: 6.1
import PackageDescription

// An app's view of MapLoader: a separate package that depends on it by path, so it sees
// only the public API (no `package` symbols, no @testable). Built and run by
// scripts/example-app.sh (part of the test command) against `maploader serve`.
let package = Package(
    name: "ExampleApp",
    platforms: [.macOS(.v15)],
    // The traits an app names pick MapLoader's C libraries: zstd from the system
    // ("SystemZstd", found with pkg-config: Linux) or from the zstd repository's own package
    // ("PackagedZstd": Xcode and Android builds; scripts/app-build.sh builds that here), and
    // LZMA2 patches with the system's liblzma ("LZMA"), which app builds go without.
    dependencies: [.package(name: "MapLoader", path: "../..", traits: ["SystemZstd", "LZMA"])],
    targets: [
        .executableTarget(name: "ExampleApp", dependencies: [.product(name: "MapLoader", package: "MapLoader")]),
        // Every Swift example of the README, the DocC articles and the doc comments
        // (scripts/snippets.py), compiled as written; examples leave values unused, hence no warnings.
        .target(
            name: "Snippets", dependencies: [.product(name: "MapLoader", package: "MapLoader")],
            swiftSettings: [.unsafeFlags(["-suppress-warnings"])]),
    ]
)
