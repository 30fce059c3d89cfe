// swift-tools-version: 6.0
import PackageDescription

// Dependencies, and why each one is here:
// - swift-argument-parser: the `maploader` CLI (help text, subcommands, validation).
// - swift-crypto: SHA-256 for every pinned byte, Ed25519 for signed catalogs.
// The client's HTTP is Foundation's URLSession and the manifest server is a small
// POSIX-socket server of our own (see Sources/ManifestServer), so neither NIO nor
// Hummingbird is compiled: a clean build stays near two minutes on two cores.
let package = Package(
    name: "MapLoader",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "MapLoader", targets: ["MapLoader"]),
        .executable(name: "maploader", targets: ["maploader"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    ],
    targets: [
        .systemLibrary(name: "CArchive", pkgConfig: "libarchive",
                       providers: [.apt(["libarchive-dev"]), .brew(["libarchive"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd",
                       providers: [.apt(["libzstd-dev"]), .brew(["zstd"])]),
        .target(
            name: "MapLoader",
            dependencies: [
                "CArchive", "CZstd",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(name: "MapPublisher", dependencies: ["MapLoader", "CArchive", "CZstd"]),
        .target(name: "ManifestServer"),
        .target(name: "MapLoaderFuzzing", dependencies: ["MapLoader"]),
        .executableTarget(name: "maploader-fuzz", dependencies: ["MapLoaderFuzzing"]),
        // Benchmark: does an install leave Swift's cooperative pool free? (scripts/bench-pool.sh)
        .executableTarget(name: "maploader-pool-bench", dependencies: ["MapLoader", "MapPublisher", "ManifestServer"]),
        .executableTarget(
            name: "maploader",
            dependencies: [
                "MapLoader", "MapPublisher", "ManifestServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "ManifestServerTests", dependencies: ["ManifestServer"]),
        .testTarget(
            name: "MapLoaderTests",
            dependencies: ["MapLoader", "MapPublisher", "ManifestServer", "MapLoaderFuzzing"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
