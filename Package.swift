// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Herald",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "herald", targets: ["herald"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
    ],
    targets: [
        // The one thin C-interop module: nghttp2, protobuf-c, OpenSSL, SQLite
        // headers, shims for macros Swift cannot import, and link settings.
        .target(
            name: "CInterop",
            linkerSettings: [
                .linkedLibrary("nghttp2"),
                .linkedLibrary("protobuf-c"),
                .linkedLibrary("ssl"),
                .linkedLibrary("crypto"),
                .linkedLibrary("sqlite3"),
                .linkedLibrary("z"),
            ]
        ),
        // protoc-c output for Protos/ (rebuilt by scripts/gen-protos.sh).
        .target(
            name: "HeraldProtos",
            dependencies: ["CInterop"],
            path: "Generated",
            sources: ["src"],
            publicHeadersPath: "include"
        ),
        // Shared primitives, pure Swift (no C interop, no NIO): JSON, Base64,
        // UUIDs, Timestamp and RFC 3339, POSIX file I/O, APNs header values.
        .target(
            name: "HeraldPrimitives",
            linkerSettings: [.linkedLibrary("m")]
        ),
        // The push domain: pure Swift, no C, no I/O, time passed in.
        .target(
            name: "HeraldCore",
            dependencies: ["HeraldPrimitives", "TimeZones"],
            // Double.rounded() and friends lower to libm calls; nothing else
            // links libm into a binary that uses only the core.
            linkerSettings: [.linkedLibrary("m")]
        ),
        // The one nghttp2 session wrapper (options, callbacks -> events,
        // checked submits, one DATA provider) for servers and clients.
        .target(
            name: "HTTP2Core",
            dependencies: [
                "CInterop",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // Generic gRPC server on nghttp2 (h2c), knows nothing about pushes.
        .target(
            name: "GRPCEngine",
            dependencies: [
                "CInterop",
                "HTTP2Core",
                "HeraldPrimitives",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // OpenSSL TLS over NIO with memory BIOs, and nghttp2 session helpers
        // shared by the APNs client and the APNs simulator.
        .target(
            name: "TLSTransport",
            dependencies: [
                "CInterop",
                "HTTP2Core",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The one HTTP/2-over-TLS client pool both providers use: connections
        // (ALPN h2), slots, MAX_CONCURRENT_STREAMS, PING keep-alive, GOAWAY,
        // reconnect backoff, response timeouts; one clock; generic over a
        // small provider adapter.
        .target(
            name: "ProviderHTTP2",
            dependencies: [
                "CInterop",
                "HTTP2Core",
                "HeraldPrimitives",
                "TLSTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The APNs client: ES256 JWT, reasons, retries; an adapter over ProviderHTTP2.
        .target(
            name: "APNs",
            dependencies: [
                "CInterop",
                "HTTP2Core",
                "HeraldPrimitives",
                "ProviderHTTP2",
                "TLSTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The server side both provider simulators share: TLS listener, one
        // nghttp2 server session per connection, records, record file.
        .target(
            name: "ProviderSimulation",
            dependencies: [
                "CInterop",
                "HTTP2Core",
                "HeraldPrimitives",
                "TLSTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // A local APNs stand-in (TLS + HTTP/2) for development and tests.
        .target(
            name: "APNsSimulation",
            dependencies: [
                "ProviderSimulation",
                "CInterop",
                "HTTP2Core",
                "HeraldPrimitives",
                "TLSTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The FCM HTTP v1 client: service-account OAuth (RS256 JWT), errors,
        // retries, rate; an adapter over ProviderHTTP2.
        .target(
            name: "FCM",
            dependencies: [
                "CInterop",
                "HTTP2Core",
                "HeraldPrimitives",
                "ProviderHTTP2",
                "TLSTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A local FCM HTTP v1 + OAuth2 token endpoint stand-in (TLS + HTTP/2).
        .target(
            name: "FCMSimulation",
            dependencies: [
                "ProviderSimulation",
                "CInterop",
                "HTTP2Core",
                "HeraldPrimitives",
                "TLSTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // IANA time zones: a TZif (RFC 8536) reader, POSIX TZ footer rules,
        // wall time <-> UTC by SPEC §4b, quiet hours. Pure Swift; the one
        // file read is ZoneInfoDirectory.
        .target(name: "TimeZones", dependencies: ["HeraldPrimitives"]),
        // Durable storage behind a protocol: embedded SQLite (WAL) first.
        .target(name: "HeraldStorage", dependencies: [
            "CInterop", "HeraldCore", "HeraldPrimitives", .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
        ]),
        // The PostgreSQL store (shared database, many replicas) on postgres-nio.
        .target(name: "HeraldPostgres", dependencies: [
            "HeraldStorage", "HeraldCore", "HeraldPrimitives",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The provider seam: what the dispatcher needs from a push platform
        // (route, render + send one device's push, a neutral result), and
        // the registry holding one provider per platform. No provider's words.
        .target(name: "PushProviders", dependencies: [
            "HeraldCore", "HeraldPrimitives", "HeraldStorage", .product(name: "Logging", package: "swift-log"),
        ]),
        // The APNs adapter over the provider seam: the gateway (routes,
        // reload, books, the bundled simulator), route specs, per-locale
        // rendering, sending, the refusal -> outcome mapping.
        .target(name: "APNsProvider", dependencies: [
            "PushProviders", "APNs", "APNsSimulation", "TLSTransport", "HeraldCore", "HeraldPrimitives", "HeraldStorage",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The FCM adapter over the provider seam: the gateway (routes,
        // reload, books, the bundled simulator), route specs, rendering,
        // sending, the refusal -> outcome mapping.
        .target(name: "FCMProvider", dependencies: [
            "PushProviders", "FCM", "FCMSimulation", "TLSTransport", "HeraldCore", "HeraldPrimitives", "HeraldStorage",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Handlers (protobuf-c <-> domain at the edge), Status, Health; wiring.
        .target(
            name: "HeraldService",
            dependencies: [
                "CInterop",
                "HeraldProtos",
                "HeraldCore",
                "HeraldPrimitives",
                "TimeZones",
                "GRPCEngine",
                "APNs",
                "APNsSimulation",
                "FCM",
                "FCMSimulation",
                "TLSTransport",
                "HeraldStorage",
                "HeraldPostgres",
                "PushProviders",
                "APNsProvider",
                "FCMProvider",
                // The descriptor-driven proto3 JSON mapping (Connect) is HeraldClient's, shared.
                "HeraldClient",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // The `herald` client subcommands' engine: gRPC calls over HTTP2Core
        // (h2c, or TLS through TLSTransport), protoc-c messages built and read
        // through their descriptors, replies as tables or proto3 JSON.
        .target(
            name: "HeraldClient",
            dependencies: [
                "CInterop", "HeraldProtos", "HeraldPrimitives", "HTTP2Core", "GRPCEngine", "TLSTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Micro-benchmarks of the pure core (bench/core.sh runs it in release).
        .executableTarget(name: "herald-bench", dependencies: ["HeraldCore", "HeraldPrimitives", "TimeZones"]),
        .executableTarget(
            name: "herald",
            dependencies: [
                "CInterop",
                "HeraldService",
                "HeraldStorage",
                "HeraldPrimitives",
                "APNs",
                "APNsSimulation",
                "FCMSimulation",
                "HeraldCore",
                "TimeZones",
                "TLSTransport",
                "APNsProvider",
                "FCMProvider",
                "HeraldClient",
                "GRPCEngine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // Release links with lld: packed relative relocations (DT_RELR, glibc
            // ≥ 2.36) instead of 3 MB of RELA records read at every start, and no
            // exported symbol table (the static stdlib's `-export-dynamic` is for
            // test bundles). Peak RSS under load: 39 → 31 MiB (bench/RESULTS.md).
            linkerSettings: [
                .unsafeFlags(
                    ["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                     "-Xlinker", "--no-export-dynamic"],
                    .when(platforms: [.linux], configuration: .release))
            ]
        ),
        // Fuzz targets (deframer, request decoders, JSON, TZif) as plain functions,
        // shared by the libFuzzer binary and the corpus replay test.
        .target(
            name: "HeraldFuzz",
            dependencies: [
                "CInterop", "HeraldProtos", "HeraldCore", "HeraldPrimitives", "GRPCEngine", "HeraldStorage", "HeraldService",
                "TimeZones", "HeraldClient",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "fuzz/Sources/HeraldFuzz"
        ),
        // `fuzz/run.sh` builds it with -sanitize=fuzzer (libFuzzer's main);
        // a normal build gives a corpus replay tool (`herald-fuzz TARGET PATH…`).
        .executableTarget(name: "herald-fuzz", dependencies: ["HeraldFuzz"], path: "fuzz/Sources/herald-fuzz"),
        .testTarget(name: "HeraldFuzzTests", dependencies: ["HeraldFuzz"]),
        // Helpers shared by the test targets (PRNG, manual clock, temporary
        // directories, an in-memory store, a fake APNs gateway, the one
        // manual provider clock), so each exists once.
        .target(
            name: "HeraldTestSupport",
            dependencies: [
                "HeraldService", "HeraldStorage", "HeraldCore", "APNs", "FCM", "HeraldPrimitives", "ProviderHTTP2",
                "PushProviders", "APNsProvider", "FCMProvider",
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Tests/HeraldTestSupport"),
        .testTarget(
            name: "HeraldCoreTests", dependencies: ["HeraldCore", "HeraldPrimitives", "HeraldTestSupport", "TimeZones"],
            exclude: ["Golden"]),  // read by path, not a resource bundle
        .testTarget(name: "TimeZonesTests", dependencies: ["TimeZones", "HeraldPrimitives"]),
        .testTarget(name: "HeraldPrimitivesTests", dependencies: ["HeraldPrimitives", "HeraldTestSupport"]),
        .testTarget(name: "GRPCEngineTests", dependencies: [
            "GRPCEngine", "HTTP2Core", "CInterop",
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
        ]),
        .testTarget(name: "TLSTransportTests", dependencies: [
            "TLSTransport",
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
        ]),
        .testTarget(
            name: "APNsTests",
            dependencies: [
                "APNs", "APNsSimulation", "TLSTransport", "HeraldPrimitives", "HeraldTestSupport",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        .testTarget(
            name: "FCMTests",
            dependencies: [
                "FCM", "FCMSimulation", "TLSTransport", "HeraldPrimitives", "HeraldTestSupport",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "ProviderHTTP2Tests", dependencies: [
            "ProviderHTTP2", "HeraldPrimitives", .product(name: "NIOEmbedded", package: "swift-nio"),
        ]),
        .testTarget(
            name: "ProviderSimulationTests",
            dependencies: [
                "ProviderSimulation", "HTTP2Core", "TLSTransport", "CInterop", "HeraldPrimitives",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
            ]),
        .testTarget(
            name: "FCMSimulationTests",
            dependencies: [
                "FCMSimulation", "HTTP2Core", "TLSTransport", "HeraldPrimitives", "CInterop",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "HeraldStorageTests", dependencies: [
            "HeraldStorage", "HeraldPostgres", "HeraldCore", "HeraldPrimitives", "HeraldTestSupport",
            .product(name: "PostgresNIO", package: "postgres-nio"),
        ]),
        .testTarget(name: "HeraldClientTests", dependencies: ["HeraldClient", "GRPCEngine", "HeraldPrimitives", "HeraldProtos", "CInterop"]),
        .testTarget(name: "HeraldServiceTests", dependencies: [
            "HeraldService", "HeraldProtos", "HeraldPrimitives", "HeraldTestSupport", "FCM", "TLSTransport", "HeraldCore",
            "PushProviders", "APNsProvider", "FCMProvider",
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)

// Every Swift target: existentials spelled `any`, and imports internal unless
// marked `public import` (so the compiler checks that no C type escapes the
// edge), as hummingbird 2 does.
for target in package.targets where target.type != .system && target.name != "CInterop" && target.name != "HeraldProtos" {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ]
}
