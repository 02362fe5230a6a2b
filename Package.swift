// swift-tools-version:6.0
import PackageDescription

/// Swift 6 language mode everywhere, plus the two upcoming features STYLE.md asks for.
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "stage-compositor",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "stage-compositor", targets: ["stage-compositor"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
    ],
    targets: [
        // C: FFmpeg 5.1 through pkg-config, and prefixed wrappers for its macros.
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat",
            providers: [.apt(["libavcodec-dev", "libavformat-dev", "libswscale-dev",
                              "libswresample-dev", "libavutil-dev"])]
        ),
        .target(
            name: "CFFmpegShim",
            dependencies: ["CFFmpeg"],
            linkerSettings: ["avformat", "avcodec", "swscale", "swresample", "avutil"].map { .linkedLibrary($0) }
        ),

        // Pure modules: Foundation and MediaCore only.
        .target(name: "MediaCore", swiftSettings: strict),
        .target(name: "Layout", dependencies: ["MediaCore"], swiftSettings: strict),
        .target(name: "Lifecycle", dependencies: ["MediaCore"], swiftSettings: strict),
        .target(name: "HLS", dependencies: ["MediaCore"], swiftSettings: strict),
        .target(name: "APIModels", dependencies: ["MediaCore", "Layout"], swiftSettings: strict),
        .target(name: "Events", dependencies: ["MediaCore", "Lifecycle"], swiftSettings: strict),
        .target(name: "Stages", dependencies: ["MediaCore"], swiftSettings: strict),

        // Object storage behind one protocol: a local directory per bucket (S3 later).
        .target(name: "Storage", dependencies: ["MediaCore"], swiftSettings: strict),

        // The only importer of the C modules.
        .target(name: "FFmpeg", dependencies: ["CFFmpeg", "CFFmpegShim", "MediaCore"], swiftSettings: strict),

        // Media pipeline and outputs.
        .target(
            name: "Pipeline",
            dependencies: ["FFmpeg", "MediaCore", "Layout", "Stages",
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .target(
            name: "Destinations",
            dependencies: ["FFmpeg", "MediaCore", "HLS", "Pipeline", "Storage",
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),

        // Durable control-plane state: configurations, stages, tags, compositions (SQLite via GRDB).
        .target(
            name: "Persistence",
            dependencies: ["APIModels", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict
        ),

        // The daemon: HTTP control plane, composition manager, configuration, events hook, metrics.
        .target(
            name: "Server",
            dependencies: ["APIModels", "Persistence", "Lifecycle", "Events", "Pipeline", "Destinations",
                           "Stages", "Storage", "HLS", "Layout", "MediaCore", "FFmpeg",
                           .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "Metrics", package: "swift-metrics"),
                           .product(name: "Prometheus", package: "swift-prometheus"),
                           .product(name: "HTTPTypes", package: "swift-http-types"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),

        .executableTarget(
            name: "stage-compositor",
            dependencies: ["Pipeline", "Destinations", "Layout", "Stages", "HLS", "MediaCore", "Storage", "FFmpeg", "Server",
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),

        .testTarget(name: "MediaCoreTests", dependencies: ["MediaCore"]),
        .testTarget(name: "LayoutTests", dependencies: ["Layout", "MediaCore"]),
        .testTarget(name: "LifecycleTests", dependencies: ["Lifecycle", "MediaCore"]),
        .testTarget(name: "HLSTests", dependencies: ["HLS", "MediaCore"]),
        .testTarget(name: "APIModelsTests", dependencies: ["APIModels", "Layout", "MediaCore"]),
        .testTarget(name: "StorageTests", dependencies: ["Storage"]),
        .testTarget(name: "EventsTests", dependencies: ["Events", "Lifecycle"]),
        .testTarget(name: "StagesTests", dependencies: ["Stages"]),
        .testTarget(name: "FFmpegTests", dependencies: ["FFmpeg"]),
        .testTarget(name: "PersistenceTests", dependencies: ["Persistence", "APIModels"]),
        .testTarget(name: "ServerTests", dependencies: ["Server", "Persistence", "APIModels", "Lifecycle", "MediaCore",
                                                        .product(name: "HummingbirdTesting", package: "hummingbird"),
                                                        .product(name: "HTTPTypes", package: "swift-http-types"),
                                                        .product(name: "Prometheus", package: "swift-prometheus"),
                                                        .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "EndToEndTests", dependencies: ["Pipeline", "Destinations", "Stages", "HLS", "Layout", "MediaCore", "Storage"]),
    ]
)
