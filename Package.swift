// swift-tools-version: 6.2
import PackageDescription

// Dependencies, and why each one is here:
// - swift-argument-parser: the `maploader` CLI (help text, subcommands, validation).
// - swift-crypto: SHA-256 for every pinned byte, Ed25519 for signed catalogs.
// - swift-system: typed file descriptors and errno for the platform layer (MapPlatform),
//   so the library builds for Linux and Apple platforms alike.
// The client's HTTP is libcurl on Linux (a system library, with back-pressure: a body goes
// to disk as fast as the disk takes it, never piling up in memory), Foundation's URLSession
// elsewhere (and on Linux on request), and the manifest server is a
// small POSIX-socket server of our own (see Sources/ManifestServer), so neither NIO nor
// Hummingbird is compiled: a clean build stays near two minutes on two cores.
// - zstd (only with the trait PackagedZstd): zstd built from its own repository's package,
//   for app builds that have no pkg-config (Xcode, the Swift SDK for Android). SwiftPM 6.2
//   and later resolve it only while the trait is on (hence tools version 6.2); the default
//   build uses the system's libzstd.
let system: Target.Dependency = .product(name: "SystemPackage", package: "swift-system")
// liblzma, only with the trait LZMA (on by default; app builds go without it).
let lzma: Target.Dependency = .target(name: "CLzma", condition: .when(traits: ["LZMA"]))
// zstd for the client library: the system's (the default) or the zstd package's.
let zstd: [Target.Dependency] = [
    .target(name: "CZstd", condition: .when(traits: ["SystemZstd"])),
    .product(name: "libzstd", package: "zstd", condition: .when(traits: ["PackagedZstd"])),
]
let crypto: Target.Dependency = .product(name: "Crypto", package: "swift-crypto")
// The client library's import lines show real use: an import is internal unless marked
// `package` or `public` (the file's own declarations show that module's types), and a
// file sees members only of modules it imports itself.
let imports: [SwiftSetting] = [
    .enableUpcomingFeature("InternalImportsByDefault"), .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "MapLoader",
    // iOS 18 / macOS 15: the Synchronization module (Mutex) and typed throws in the standard library.
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "MapLoader", targets: ["MapLoader"]),
        .executable(name: "maploader", targets: ["maploader"]),
    ],
    // Where the client library's zstd comes from. Choose one: an app's Package.swift names
    // `traits: ["PackagedZstd"]` on this package; on the command line,
    // `swift build --disable-default-traits --traits PackagedZstd`.
    traits: [
        .trait(name: "SystemZstd", description: "zstd from the system (libzstd-dev, found with pkg-config): the default."),
        .trait(
            name: "PackagedZstd",
            description: "zstd built from the zstd repository's own Swift package (product libzstd): for Xcode and Android builds."),
        .trait(
            name: "LZMA",
            description:
                "LZMA2 payloads in patches (the system's liblzma, found with pkg-config). Without it a client plans the full archive, or another chain, for a patch that needs LZMA2; the publisher makes none."
        ),
        .default(enabledTraits: ["SystemZstd", "LZMA"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        .package(url: "https://github.com/facebook/zstd", .upToNextMinor(from: "1.5.6")),
    ],
    targets: [
        .systemLibrary(
            name: "CArchive", pkgConfig: "libarchive",
            providers: [.apt(["libarchive-dev"]), .brew(["libarchive"])]),
        .systemLibrary(
            name: "CZstd", pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"]), .brew(["zstd"])]),
        // LZMA2 for small files' payloads: its range coder beats zstd's on map tiles by about a
        // tenth (liblzma, which libarchive links already).
        .systemLibrary(
            name: "CLzma", pkgConfig: "liblzma",
            providers: [.apt(["liblzma-dev"]), .brew(["xz"])]),
        .systemLibrary(
            name: "CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]),
        .systemLibrary(
            name: "CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]),
        // Suffix arrays for the publisher's bsdiff-class codec (the client decodes without it).
        .systemLibrary(
            name: "CDivSufSort", pkgConfig: "libdivsufsort",
            providers: [.apt(["libdivsufsort-dev"]), .brew(["libdivsufsort"])]),
        // zstd's derived parameters for a level (experimental API) for the publisher, in C.
        // The define reaches zstd's module too (a C target imports zstd.h as a module on Apple platforms).
        .target(name: "CZstdParameters", dependencies: zstd, cSettings: [.define("ZSTD_STATIC_LINKING_ONLY")]),
        // The client library, bottom to top; every arrow points down this list.
        // CPlatform: the few system calls Swift's Linux C-library module hides (syncfs), inline C.
        .target(name: "CPlatform"),
        // Platform: every system call (files, locks, mmap, fsync, statfs), hashing, and zstd
        // for small in-memory frames (manifests).
        .target(name: "MapPlatform", dependencies: ["CPlatform", system, crypto] + zstd, swiftSettings: imports),
        // Model: catalog, manifests, installed state, trust, errors: values and their codecs.
        // It uses MapPlatform for hashing, typed errno and zstd frames; it imports no C module.
        .target(
            name: "MapModel", dependencies: ["MapPlatform", crypto, system],
            // The English strings table an app copies to translate the errors (not a resource).
            exclude: ["Localization"], swiftSettings: imports),
        // Planner: (installed state, manifest, selection) -> plan; imports only MapModel.
        .target(name: "MapPlanner", dependencies: ["MapModel"], swiftSettings: imports),
        // Delta codec: the patch container, its decoder, the zstd- and LZMA-based apply, and
        // see-through deltas of gzip files (zlib re-deflates them byte for byte).
        .target(name: "MapDelta", dependencies: ["MapModel", "MapPlatform", "CZlib", lzma, system] + zstd, swiftSettings: imports),
        // Store: generations, locks, leases, archive extraction into staging (its own tar
        // reader over zstd and zlib: no libarchive on the client).
        .target(name: "MapStore", dependencies: ["MapModel", "MapPlatform", "CZlib", system, crypto] + zstd, swiftSettings: imports),
        // Transfer: HTTP and folder sites, resumable downloads, the signed catalog client.
        // libcurl only on Linux; Apple platforms and Android carry downloads with URLSession.
        .target(
            name: "MapTransfer",
            dependencies: ["MapModel", "MapPlatform", .target(name: "CCurl", condition: .when(platforms: [.linux])), system],
            swiftSettings: imports),
        // The MapLoader actor: operations over the layers above, events, the public API.
        .target(
            name: "MapLoader",
            dependencies: [
                "MapModel", "MapPlanner", "MapDelta", "MapStore", "MapTransfer", "MapPlatform",
            ], swiftSettings: imports),
        // Publisher: builds sites (archives, patches, signed catalog); never linked by apps.
        .target(
            name: "MapPublisher",
            dependencies: [
                "MapModel", "MapDelta", "MapStore", "MapPlatform", "CArchive", "CZstdParameters", "CZlib", lzma,
                "CDivSufSort",
            ] + zstd),
        .target(name: "ManifestServer", dependencies: ["MapPlatform"]),
        .target(name: "MapLoaderFuzzing", dependencies: ["MapModel", "MapDelta", "MapStore"]),
        .executableTarget(name: "maploader-fuzz", dependencies: ["MapLoaderFuzzing"]),
        // Benchmark: does an install leave Swift's cooperative pool free? (scripts/bench-pool.sh)
        .executableTarget(name: "maploader-pool-bench", dependencies: ["MapLoader", "MapPublisher", "ManifestServer"]),
        .executableTarget(
            name: "maploader",
            dependencies: [
                "MapLoader", "MapPublisher", "MapDelta", "ManifestServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "ManifestServerTests", dependencies: ["ManifestServer"]),
        // Tests by layer and speed, each target run in a process of its own (scripts/test.sh):
        // MapCodecTests: codecs, containers, planner, download decisions; no server, no process.
        // MapLoaderTests: the library against a loopback server or a folder site.
        // MapCLITests: the `maploader` command parsed in process and spawned, and real crashes (SIGKILL).
        // MapTestSupport: what they share (sites, releases, fixtures, the CLI runner).
        .target(
            name: "MapTestSupport",
            dependencies: [
                "MapLoader", "MapModel", "MapPlanner", "MapDelta", "MapStore", "MapTransfer", "MapPlatform",
                "MapPublisher", "ManifestServer",
            ],
            path: "Tests/MapTestSupport"),
        // MapCodecTests also decodes patches stored in StoredPatches/.
        .testTarget(name: "MapCodecTests", dependencies: ["MapTestSupport", "MapLoaderFuzzing"], exclude: ["StoredPatches"]),
        .testTarget(name: "MapLoaderTests", dependencies: ["MapTestSupport"]),
        // MapCLITests also parses the command line in process (help snapshots in Help/).
        .testTarget(
            name: "MapCLITests",
            dependencies: [
                "MapTestSupport", "maploader", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            exclude: ["Help"]),
    ],
    swiftLanguageModes: [.v6]
)
