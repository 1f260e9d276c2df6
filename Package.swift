// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "RangeFS",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "rangefs", targets: ["rangefs"]),
        .library(name: "RangeFSCore", targets: ["RangeFSCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // libfuse3 and libcurl, seen through small shim headers (FUSE_USE_VERSION, typed curl setters).
        .systemLibrary(name: "CFuse", path: "Sources/CFuse", pkgConfig: "fuse3",
                       providers: [.apt(["libfuse3-dev"])]),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        // libssh2, for SFTP directory listings with exact sizes and dates (libcurl reads the files).
        .systemLibrary(name: "CSSH2", path: "Sources/CSSH2", pkgConfig: "libssh2",
                       providers: [.apt(["libssh2-1-dev"])]),
        .systemLibrary(name: "CSystem", path: "Sources/CSystem"),
        // Kernel FUSE passthrough for complete files, added to libfuse 3.14 from outside.
        .target(name: "CFusePassthrough", dependencies: ["CFuse"]),
        // Manifest, namespace, remote, cache store, fetcher and the filesystem core that answers the
        // kernel's operations: everything a test can drive without a mount (docs/ARCHITECTURE.md).
        .target(
            name: "RangeFSCore",
            dependencies: [
                "CCurl", "CSSH2",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // The libfuse3 binding: translates kernel requests into calls on RangeFSCore's
        // MountedFilesystem and its answers into replies; it decides nothing itself.
        .target(
            name: "RangeFSFuse",
            dependencies: [
                "CFuse", "CFusePassthrough", "RangeFSCore",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "rangefs",
            dependencies: [
                "RangeFSCore", "RangeFSFuse", "CSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A scriptable HTTP server on loopback that misbehaves on purpose, for the tests.
        .target(name: "FaultServer", path: "Tests/FaultServer"),
        .testTarget(name: "RangeFSCoreTests", dependencies: [
            "RangeFSCore", "FaultServer",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "RangeFSIntegrationTests", dependencies: ["RangeFSCore", "FaultServer", "CSystem", "rangefs"]),
    ],
    swiftLanguageModes: [.v6]
)
