// swift-tools-version:6.0
import PackageDescription

/// Swift 6 language mode everywhere, plus two upcoming features: every existential spelled `any`,
/// and imports internal unless marked `public` (so a module's interface names what it re-exports).
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
        // ops: SigV4 (Auth), webhook delivery and its Service (EventSinks).
        .package(url: "https://github.com/apple/swift-crypto", "3.0.0"..<"5.0.0"),
        // WHIP: participant tokens are ES384 JWTs.
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.0.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.20.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.65.0"),
        // daemon: HTTP API, SQLite state, metrics.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        // The HTTP parts Hummingbird's channel carries (a parse error's answer, HTTPLimits).
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.20.0"),
        // ingest: RTMPS and its self-signed certificate.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.27.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.0.0"),
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

        // The commit the Makefile stamps into a build (BuildInfo.commit); "unknown" otherwise.
        .target(name: "CBuildInfo"),

        // Pure modules: Foundation and MediaCore only.
        .target(name: "MediaCore", swiftSettings: strict),
        .target(name: "Layout", dependencies: ["MediaCore"], swiftSettings: strict),
        .target(name: "Lifecycle", dependencies: ["MediaCore"], swiftSettings: strict),
        .target(name: "HLS", dependencies: ["MediaCore"], swiftSettings: strict),
        .target(name: "APIModels", dependencies: ["MediaCore", "Layout", "Lifecycle"], swiftSettings: strict),
        .target(name: "Events", dependencies: ["MediaCore", "Lifecycle"], swiftSettings: strict),
        .target(name: "Stages", dependencies: ["MediaCore", "HLS", "Layout"], swiftSettings: strict),
        // Pure: SigV4 request verification (Foundation + Crypto only).
        .target(name: "Auth", dependencies: [.product(name: "Crypto", package: "swift-crypto")], swiftSettings: strict),

        // Where composition events go: JSON-lines file, stdout, webhook (a Service).
        .target(
            name: "EventSinks",
            dependencies: ["Events",
                           .product(name: "AsyncHTTPClient", package: "async-http-client"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
            swiftSettings: strict
        ),

        // Object storage behind one protocol: a local directory per bucket, or any S3-compatible endpoint.
        .target(
            name: "Storage",
            dependencies: ["MediaCore", "Auth",
                           .product(name: "AsyncHTTPClient", package: "async-http-client"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOHTTP1", package: "swift-nio"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),

        // The only importer of the C modules.
        .target(name: "FFmpeg", dependencies: ["CFFmpeg", "CFFmpegShim", "MediaCore"], swiftSettings: strict),

        // WHEP viewers of a composition: its encode packetized once, handed to every viewer.
        .target(name: "WHEP", dependencies: ["MediaCore", "FFmpeg", "Pipeline", "WebRTCMedia"], swiftSettings: strict),

        // Overlays' text: fontconfig, FriBidi, HarfBuzz, FreeType and Cairo (Debian's); only
        // OverlayDrawing imports it.
        .systemLibrary(name: "CTextStack", pkgConfig: "harfbuzz",
                       providers: [.apt(["libharfbuzz-dev", "libfreetype-dev", "libfontconfig-dev", "libfribidi-dev", "libcairo2-dev"])]),
        .target(name: "OverlayDrawing", dependencies: ["CTextStack", "MediaCore"], swiftSettings: strict),

        // Media pipeline and outputs.
        .target(
            name: "Pipeline",
            dependencies: ["FFmpeg", "MediaCore", "Layout", "Stages", "LiveStage", "OverlayDrawing",
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // Individual participant recording: each publisher's media remuxed (no decode, no
        // encode) into fMP4 HLS with its metadata and keyframe thumbnails.
        .target(
            name: "ParticipantRecording",
            dependencies: ["Destinations", "FFmpeg", "HLS", "MediaCore", "Pipeline", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // Live stages: publishers on the stage now, their media fanned out to compositions.
        .target(
            name: "LiveStage",
            dependencies: ["MediaCore"],
            swiftSettings: strict
        ),
        // Pure RTMP: handshake, chunk stream, AMF0, the publish conversation, FLV tags.
        .target(name: "RTMP", dependencies: ["MediaCore"], path: "Sources/Ingest/RTMP", swiftSettings: strict),
        // Pure WebRTC receive stack: STUN, ICE-lite, SDP offer/answer (crypto injected) ...
        .target(name: "WebRTCSignal", path: "Sources/WebRTC/Signal", swiftSettings: strict),
        // ... and RTP/RTCP, NACK, keyframe requests, REMB, reports, depacketizers, sender clocks.
        .target(name: "WebRTCMedia", dependencies: ["MediaCore"], path: "Sources/WebRTC/Media", swiftSettings: strict),
        // ... and one publisher's media put together: RTP in, access units on one timeline out.
        .target(name: "WebRTCPublisher", dependencies: ["WebRTCSignal", "WebRTCMedia"], path: "Sources/WebRTC/Publisher",
                swiftSettings: strict),
        // C for WebRTC: Debian's OpenSSL 3 (DTLS) and libsrtp2, and prefixed helpers for their macros.
        .systemLibrary(name: "COpenSSL", path: "Sources/WebRTC/COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSRTP", path: "Sources/WebRTC/CSRTP", pkgConfig: "libsrtp2", providers: [.apt(["libsrtp2-dev"])]),
        .target(name: "CWebRTCShim", dependencies: ["COpenSSL", "CSRTP"], path: "Sources/WebRTC/CWebRTCShim"),
        // DTLS-SRTP: the only importer of the three C modules above.
        .target(name: "WebRTCSecurity", dependencies: ["COpenSSL", "CSRTP", "CWebRTCShim"], path: "Sources/WebRTC/Security",
                swiftSettings: strict),
        // WHIP media transport: one UDP socket (NIO) for every publisher's ICE, DTLS and SRTP,
        // each session feeding its LivePublisher.
        .target(
            name: "WebRTCIngest",
            dependencies: ["WebRTCSignal", "WebRTCMedia", "WebRTCPublisher", "WebRTCSecurity", "LiveStage",
                           "MediaCore",
                           .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
            path: "Sources/WebRTC/Ingest",
            swiftSettings: strict
        ),
        // Whole-session fuzz targets (an RTMP connection, WHIP media, STUN/SDP, API bodies) and
        // their libFuzzer driver; `make fuzz` runs them, `make test` replays their corpora.
        .target(
            name: "FuzzTargets",
            dependencies: ["RTMP", "IngestServer", "LiveStage", "MediaCore", "WebRTCSignal", "WebRTCMedia", "WebRTCPublisher",
                           "WebRTCIngest", "APIModels", "Layout", "Stages",
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOEmbedded", package: "swift-nio"),
                           .product(name: "Logging", package: "swift-log")],
            path: "Sources/Fuzz/Targets",
            swiftSettings: strict
        ),
        .executableTarget(name: "StageFuzz", dependencies: ["FuzzTargets"], path: "Sources/Fuzz/Driver", swiftSettings: strict),
        // Participant tokens: ES384 JWTs signed by the daemon or by imported customer keys.
        .target(name: "ParticipantTokens", dependencies: [.product(name: "JWTKit", package: "jwt-kit"),
                                                          .product(name: "Crypto", package: "swift-crypto")],
                swiftSettings: strict),
        // RTMP/RTMPS ingest on SwiftNIO: the pure RTMP core behind a thin connection shell.
        .target(
            name: "IngestServer",
            dependencies: ["RTMP", "LiveStage", "MediaCore",
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOSSL", package: "swift-nio-ssl"),
                           .product(name: "X509", package: "swift-certificates"),
                           .product(name: "SwiftASN1", package: "swift-asn1"),
                           .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
            path: "Sources/Ingest/Server",
            swiftSettings: strict
        ),
        .target(
            name: "Destinations",
            dependencies: ["FFmpeg", "MediaCore", "HLS", "Pipeline", "Storage", "Lifecycle",
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // A composition from request to running pipeline: the planner (StartComposition and the
        // configurations it names → one plan), the plan, its tuning, and the runner. The daemon
        // and `compose` both plan and run through it.
        .target(
            name: "Composition",
            dependencies: ["APIModels", "Persistence", "Destinations", "Pipeline", "Layout", "HLS", "MediaCore", "Storage", "FFmpeg",
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),

        // Durable control-plane state: configurations, stages, tags, compositions (SQLite via GRDB).
        .target(
            name: "Persistence",
            dependencies: ["APIModels", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict
        ),

        // A fleet node's lease and fencing decisions (pure; the heartbeat loop drives it).
        .target(name: "Fleet", swiftSettings: strict),

        // The same store in PostgreSQL (postgres-nio), for a fleet of daemons sharing one database.
        .target(
            name: "PostgresStore",
            dependencies: ["APIModels", "Persistence",
                           .product(name: "PostgresNIO", package: "postgres-nio"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),

        // The daemon: HTTP control plane, composition manager, configuration, events hook, metrics.
        .target(
            name: "Server",
            dependencies: ["Composition", "APIModels", "Persistence", "PostgresStore", "Fleet", "Lifecycle", "Events", "Pipeline", "Destinations", "LiveStage", "IngestServer",
                           "CBuildInfo",
                           "ParticipantTokens", "WebRTCIngest", "WebRTCSecurity", "WebRTCPublisher", "WebRTCSignal", "WHEP", "WebRTCMedia",
                           "Auth", "EventSinks", "Stages", "Storage", "HLS", "Layout", "MediaCore", "FFmpeg", "ParticipantRecording",
                           .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "HummingbirdTLS", package: "hummingbird"),
                           .product(name: "AsyncHTTPClient", package: "async-http-client"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "Metrics", package: "swift-metrics"),
                           .product(name: "Prometheus", package: "swift-prometheus"),
                           .product(name: "HTTPTypes", package: "swift-http-types"),
                           .product(name: "NIOSSL", package: "swift-nio-ssl"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "HummingbirdCore", package: "hummingbird"),
                           .product(name: "NIOHTTP1", package: "swift-nio"),
                           .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),

        .executableTarget(
            name: "stage-compositor",
            dependencies: ["Pipeline", "Destinations", "Composition", "Layout", "Stages", "HLS", "MediaCore", "Storage", "FFmpeg", "Server", "PostgresStore", "APIModels", "Auth",
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "AsyncHTTPClient", package: "async-http-client"),
                           .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),

        // Helpers shared by the test targets (threads for blocking work ...).
        .target(name: "TestSupport", dependencies: [.product(name: "Crypto", package: "swift-crypto")], path: "Tests/TestSupport"),
        // A scripted loopback HTTP server (webhook receivers, S3 endpoints that fail on cue).
        .target(name: "HTTPTestSupport", dependencies: [.product(name: "NIOCore", package: "swift-nio"),
                                                        .product(name: "NIOPosix", package: "swift-nio"),
                                                        .product(name: "NIOHTTP1", package: "swift-nio")],
                path: "Tests/HTTPTestSupport"),
        .testTarget(name: "MediaCoreTests", dependencies: ["MediaCore", "TestSupport"]),
        .testTarget(name: "LayoutTests", dependencies: ["Layout", "MediaCore", "TestSupport"]),
        .testTarget(name: "LifecycleTests", dependencies: ["Lifecycle", "MediaCore"]),
        .testTarget(name: "HLSTests", dependencies: ["HLS", "MediaCore", "TestSupport"]),
        .testTarget(name: "APIModelsTests", dependencies: ["APIModels", "Layout", "MediaCore", "TestSupport"]),
        .testTarget(name: "StorageTests", dependencies: ["Storage", "TestSupport", .product(name: "Logging", package: "swift-log")]),
        // S3Storage against moto_server on loopback, scripted failing servers, and a real composition.
        .testTarget(
            name: "S3StorageTests",
            dependencies: ["Storage", "Auth", "Destinations", "Composition", "Pipeline", "Stages", "HLS", "Layout", "MediaCore", "TestSupport",
                           "HTTPTestSupport",
                           .product(name: "AsyncHTTPClient", package: "async-http-client"),
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOHTTP1", package: "swift-nio")],
            exclude: ["moto_setup.py", "botocore_s3_sign.py"]
        ),
        .testTarget(name: "EventsTests", dependencies: ["Events", "Lifecycle"]),
        .testTarget(name: "StagesTests", dependencies: ["Stages", "TestSupport"]),
        .testTarget(name: "FFmpegTests", dependencies: ["FFmpeg", "MediaCore", "TestSupport"]),
        .testTarget(name: "OverlayDrawingTests", dependencies: ["OverlayDrawing", "MediaCore"]),
        .testTarget(name: "PipelineTests", dependencies: ["TestSupport", "Pipeline", "Layout", "MediaCore"]),
        .testTarget(name: "FuzzTests", dependencies: ["FuzzTargets", "APIModels", "WebRTCSignal", "WebRTCMedia", "MediaCore", "TestSupport", .product(name: "Logging", package: "swift-log")],
                    exclude: ["Corpus"]),
        .testTarget(name: "ParticipantRecordingTests", dependencies: ["ParticipantRecording", "Destinations", "Storage", "FFmpeg", "HLS",
                                                                     "LiveStage", "MediaCore", "Pipeline", "Stages", "Layout", "TestSupport",
                                                                     .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "RTMPTests", dependencies: ["RTMP", "MediaCore", "TestSupport", "FuzzTargets"]),
        .testTarget(name: "WebRTCSignalTests", dependencies: ["WebRTCSignal", "TestSupport"]),
        .testTarget(name: "WebRTCMediaTests", dependencies: ["MediaCore", "WebRTCMedia", "TestSupport"]),
        .testTarget(name: "WebRTCPublisherTests", dependencies: ["WebRTCPublisher", "WebRTCMedia", "WebRTCSignal", "TestSupport"]),
        .testTarget(name: "ParticipantTokensTests", dependencies: ["ParticipantTokens", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "WebRTCIngestTests", dependencies: ["WebRTCIngest", "WebRTCSecurity", "WebRTCPublisher", "WebRTCMedia",
                                                            "WebRTCSignal", "TestSupport"]),
        .testTarget(name: "IngestServerTests", dependencies: ["IngestServer", "RTMP", "LiveStage", "Pipeline", "FFmpeg", "MediaCore", "Layout",
                                                             .product(name: "NIOCore", package: "swift-nio"),
                                                             .product(name: "NIOEmbedded", package: "swift-nio"),
                                                             "TestSupport", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "LiveStageTests", dependencies: ["LiveStage", "Pipeline", "FFmpeg", "Layout", "MediaCore", "Stages", "TestSupport",
                                                         .product(name: "Logging", package: "swift-log"), "WHEP", "WebRTCMedia"]),
        .testTarget(name: "AuthTests", dependencies: ["Auth", "TestSupport"], exclude: ["botocore_sign.py", "aws_cli_capture.py"]),
        .testTarget(
            name: "EventSinksTests",
            dependencies: ["EventSinks", "Events", "HTTPTestSupport",
                           .product(name: "AsyncHTTPClient", package: "async-http-client"),
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOHTTP1", package: "swift-nio")]
        ),
        // systemd unit and deploy/ files: systemd-analyze verify, hardening, install.sh --dry-run.
        .testTarget(name: "OpsTests", dependencies: ["TestSupport"], exclude: ["run_with_mdwe.py"]),
        .testTarget(name: "DestinationsTests", dependencies: ["Layout", "Destinations", "Composition", "Pipeline", "Stages", "Storage", "HLS", "MediaCore", "FFmpeg", "TestSupport",
                                                            .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "FleetTests", dependencies: ["Fleet", "TestSupport"]),
        .testTarget(name: "PersistenceTests", dependencies: ["Persistence", "Lifecycle", "PostgresStore", "APIModels", "TestSupport",
                                                             .product(name: "GRDB", package: "GRDB.swift"),
                                                             .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "ServerTests", dependencies: ["Auth", "Events", "Fleet", "Server", "WHEP", "Composition", "Persistence", "PostgresStore", "APIModels", "LiveStage", "Stages", "IngestServer", "Pipeline", "FFmpeg", "ParticipantTokens",
                                                        .product(name: "PostgresNIO", package: "postgres-nio"), "Lifecycle", "MediaCore", "EventSinks", "Layout", "Destinations", "HLS", "Storage",
                                                        "TestSupport",
                                                        .product(name: "HummingbirdTesting", package: "hummingbird"),
                                                        .product(name: "AsyncHTTPClient", package: "async-http-client"),
                                                        .product(name: "NIOCore", package: "swift-nio"),
                                                        .product(name: "NIOEmbedded", package: "swift-nio"),
                                                        .product(name: "NIOHTTP1", package: "swift-nio"),
                                                        .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                                                        .product(name: "HTTPTypes", package: "swift-http-types"),
                                                        .product(name: "Prometheus", package: "swift-prometheus"),
                                                        .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "EndToEndTests", dependencies: ["Pipeline", "Composition", "FFmpeg", "Destinations", "Stages", "HLS", "Layout", "MediaCore", "Storage", "TestSupport"]),
    ]
)
