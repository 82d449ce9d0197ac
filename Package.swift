// swift-tools-version:6.2
import PackageDescription

/// Every target of ours compiles in Swift 6 language mode with warnings treated as errors:
/// the test command (and so CI) builds exactly what a developer builds, and a warning cannot slip in.
let strictSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .treatAllWarnings(as: .error),
]

/// Test targets: Swift 6 mode, but warnings stay warnings, because Swift Testing's own macro
/// expansions emit a warning (`'@const' value should be initialized with a compile-time value`)
/// on this toolchain that no test code can avoid.
let testSettings: [SwiftSetting] = [.swiftLanguageMode(.v6)]

/// The two binaries a box runs, in release, linked by lld:
/// - without the whole symbol table exported. The static Swift standard library's link arguments add
///   `-export-dynamic`, which put 29,000 symbols and their names (2.7 MB) in the stripped binary and 1.6 MiB
///   in the agent's resident memory, for nothing that loads at run time. A crash is read from its core with
///   the unstripped build (docs/OPERATIONS.md);
/// - with packed relative relocations (DT_RELR, glibc 2.36 or later): the 80,000 pointers the loader moves
///   at start are 16 KB of bitmaps rather than 1.9 MB of records it reads (and keeps resident) every start.
let boxBinarySettings: [LinkerSetting] = [
    .unsafeFlags(
        ["-use-ld=lld", "-Xlinker", "--no-export-dynamic", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"],
        .when(configuration: .release)
    )
]

/// The agent's release link also lays out first, together, the functions it runs (tools/linker/preflightd.order,
/// written by `tools/bench --symbol-order`), and the compiler's private helpers, which have no symbol to order by
/// (tools/linker/private-helpers.ld): the kernel maps 64 KiB around each page of code a process touches, and
/// scattered through 18 MB of code they held 13 MiB of the idle agent's memory. Both need every module compiled
/// with function sections, which only the command line can ask of dependencies: the box build passes
/// `--toolset tools/linker/box.toolset.json` (tools/install, tools/bench). A function missing from the ordering
/// file (new since it was written) only lands among the rest.
let agentBinarySettings: [LinkerSetting] =
    boxBinarySettings + [
        .unsafeFlags(
            [
                "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/tools/linker/preflightd.order",
                "-Xlinker", "--no-warn-symbol-ordering",
                "-Xlinker", "-T", "-Xlinker", "\(Context.packageDirectory)/tools/linker/private-helpers.ld",
            ],
            .when(configuration: .release)
        )
    ]

let package = Package(
    name: "Preflight",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "preflightd", targets: ["preflightd"]),
        .executable(name: "preflightctl", targets: ["preflightctl"]),
        .library(name: "PreflightClient", targets: ["PreflightClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.24.0"),
        // Already in the graph through SwiftNIO; named for its Deque (the notification queue).
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        // Already in the graph through async-http-client (swift-configuration) and SwiftNIO; named for its
        // FileDescriptor (StateFiles).
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        // Already in the graph through async-http-client; named for the Delivery API's own keep-alive
        // connection (UpstreamHTTPClient's KeepAliveConnection).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ],
    targets: [
        .systemLibrary(
            name: "CZeroMQ",
            pkgConfig: "libzmq",
            providers: [.apt(["libzmq3-dev"])]
        ),
        .systemLibrary(name: "CLinuxShims"),
        .target(
            name: "ZeroMQ",
            dependencies: ["CZeroMQ", "PreflightCore"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "PreflightProtocol",
            swiftSettings: strictSettings
        ),
        // Target's on-device decisioning engine: a pure function of a rules artifact, a Delivery API request
        // and the time (no network, no clock, no ZeroMQ), so it is tested against Adobe's conformance cases alone.
        .target(
            name: "TargetDecisioning",
            dependencies: ["PreflightCore", "PreflightProtocol"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "UpstreamHTTP",
            dependencies: ["PreflightCore"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "StateFiles",
            dependencies: [
                "PreflightCore",
                "PreflightProtocol",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "PreflightCore",
            dependencies: ["CLinuxShims"],
            swiftSettings: strictSettings
        ),
        // A QR code encoder (byte mode, ISO/IEC 18004), for preflightctl to show a sign-in URL that a technician
        // scans with a phone. Written here, with no dependencies: no package for it is available to the project.
        .target(
            name: "QRCode",
            swiftSettings: strictSettings
        ),
        .target(
            name: "UpstreamHTTPClient",
            dependencies: [
                "UpstreamHTTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "TargetOffers",
            dependencies: [
                "PreflightCore",
                "PreflightProtocol",
                "StateFiles",
                "TargetDecisioning",
                "UpstreamHTTP",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "PassEntitlement",
            dependencies: [
                "PreflightCore",
                "PreflightProtocol",
                "StateFiles",
                "UpstreamHTTP",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "PreflightAgent",
            dependencies: [
                "CLinuxShims",
                "ZeroMQ",
                "PreflightCore",
                "PreflightProtocol",
                "TargetOffers",
                "PassEntitlement",
                "TargetDecisioning",
                "StateFiles",
                "UpstreamHTTP",
                "UpstreamHTTPClient",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "preflightd",
            dependencies: [
                "PreflightAgent",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings,
            linkerSettings: agentBinarySettings
        ),
        .target(
            name: "PreflightClient",
            dependencies: ["ZeroMQ", "PreflightCore", "PreflightProtocol"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "preflightctl",
            dependencies: [
                "QRCode",
                "PreflightClient",
                "PreflightProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings,
            linkerSettings: boxBinarySettings
        ),
        // The complete examples of docs/APPS.md, byte for byte (tests/python/test_apps_guide.py compares them with
        // the guide and runs them against a real agent). They use nothing but the PreflightClient product, as an
        // app's own package would.
        .executableTarget(
            name: "example-prefetch-and-load",
            dependencies: ["PreflightClient"],
            path: "Examples/PrefetchAndLoad",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "example-preauthorize",
            dependencies: ["PreflightClient"],
            path: "Examples/Preauthorize",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "example-sign-in",
            dependencies: ["PreflightClient"],
            path: "Examples/SignIn",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "example-watch-events",
            dependencies: ["PreflightClient"],
            path: "Examples/WatchEvents",
            swiftSettings: strictSettings
        ),
        // What several test targets share: a recording log handler, `eventually`. No product depends on it.
        .target(
            name: "TestSupport",
            dependencies: ["PreflightCore", .product(name: "Logging", package: "swift-log")],
            path: "Tests/TestSupport",
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "ZeroMQTests",
            dependencies: ["ZeroMQ"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "PreflightCoreTests",
            dependencies: ["PreflightCore", "CLinuxShims"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "QRCodeTests",
            dependencies: ["QRCode"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "StateFilesTests",
            dependencies: ["StateFiles"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "PreflightProtocolTests",
            dependencies: ["PreflightProtocol"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "TargetDecisioningTests",
            dependencies: ["TargetDecisioning", "PreflightProtocol"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "TargetOffersTests",
            dependencies: [
                "TargetOffers", "PreflightCore", "PreflightProtocol", "StateFiles", "TargetDecisioning", "UpstreamHTTP",
                "TestSupport", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "PassEntitlementTests",
            dependencies: [
                "PassEntitlement", "PreflightCore", "PreflightProtocol", "StateFiles", "TestSupport", "UpstreamHTTP",
                "UpstreamHTTPClient",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "PreflightAgentTests",
            dependencies: [
                "PreflightAgent", "PreflightProtocol", "TargetOffers", "TargetDecisioning", "PassEntitlement",
                "UpstreamHTTP", "ZeroMQ",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "PreflightClientTests",
            dependencies: ["PreflightClient", "PreflightProtocol", "ZeroMQ"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "PreflightClient", "PreflightProtocol", "ZeroMQ", "UpstreamHTTP", "UpstreamHTTPClient", "preflightd",
                "preflightctl", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: testSettings
        ),
    ]
)
