// swift-tools-version:6.2
import PackageDescription

// scripts/check-sanitizers sets it: see the end of the file. example-cron (which the lifecycle tests
// spawn) then builds without --postgres, so postgres-nio's stack stays out of those builds.
let skipPostgres = Context.environment["PRECISE_TIMER_SKIP_POSTGRES_TESTS"] != nil

let package = Package(
    name: "PreciseTimer",
    products: [
        .library(name: "PreciseTimer", targets: ["PreciseTimer"]),
        // The protocol, the values and the registry without the engine: a library written against
        // `TimerService` (or a test double) links no libevent. `PreciseTimer` re-exports it.
        .library(name: "PreciseTimerCore", targets: ["PreciseTimerCore"]),
        .library(name: "PreciseTimerReference", targets: ["PreciseTimerReference"]),
        .library(name: "PreciseTimerTesting", targets: ["PreciseTimerTesting"]),
        // The classic GCD wrapper's shape (`execTask` / `cancelTask`), for code ported from it.
        .library(name: "PreciseTimerCompat", targets: ["PreciseTimerCompat"]),
        // systemd's OnCalendar= syntax over the system's tzdata: a daemon without calendar jobs builds none of it.
        .library(name: "PreciseTimerCalendar", targets: ["PreciseTimerCalendar"]),
        // A separate product, so a daemon that uses only the timers builds no lifecycle code.
        .library(name: "PreciseTimerServiceLifecycle", targets: ["PreciseTimerServiceLifecycle"]),
        // Metrics on swift-metrics, in its own product: a daemon that wants none builds none.
        .library(name: "PreciseTimerMetrics", targets: ["PreciseTimerMetrics"]),
        // A TimerStateStore in PostgreSQL, for a fleet of replicas: only a daemon that depends on
        // this product builds postgres-nio (and SwiftNIO, swift-crypto, swift-nio-ssl under it).
        .library(name: "PreciseTimerPostgres", targets: ["PreciseTimerPostgres"]),
        .executable(name: "example-ticker", targets: ["example-ticker"]),
        .executable(name: "example-daemon", targets: ["example-daemon"]),
        .executable(name: "example-cron", targets: ["example-cron"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // Documentation only (`swift package generate-documentation`); no target depends on it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibevent",
            path: "CLibevent",
            pkgConfig: "libevent_core",
            providers: [.apt(["libevent-dev"])]
        ),
        // What the registry needs and Swift cannot spell: `__builtin_prefetch`, a thread-local slot
        // (each thread's spare node) read without a call, and `mremap` (variadic). No engine.
        .target(name: "CPreciseTimerCore"),
        // The protocol, the values, the registry and the scheduling logic: no engine. Every service
        // is built on it; a test double or a Dispatch engine links no libevent.
        .target(
            name: "PreciseTimerCore",
            dependencies: [
                "CPreciseTimerCore",
                // Small and dependency-free: the instruments take a Logger (disabled by default).
                .product(name: "Logging", package: "swift-log"),
                // The heaps of deadlines on the wall and continuous clocks (one module of the package).
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        // The libevent engine; re-exports the core, so `import PreciseTimer` is all a user writes.
        .target(
            name: "PreciseTimer",
            dependencies: [
                "CLibevent",
                "PreciseTimerCore",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "PreciseTimerMetrics",
            dependencies: [
                "PreciseTimer",
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "PreciseTimerReference",
            dependencies: ["PreciseTimerCore"]
        ),
        .target(
            name: "PreciseTimerTesting",
            dependencies: ["PreciseTimerCore"]
        ),
        .target(
            name: "PreciseTimerCompat",
            dependencies: ["PreciseTimerCore"]
        ),
        // Calendar schedules (systemd's OnCalendar=); reads tzdata itself, so no Foundation.
        .target(
            name: "PreciseTimerCalendar",
            dependencies: ["PreciseTimerCore"]
        ),
        // The shared TimerStateStore on PostgreSQL; the only target that imports PostgresNIO.
        .target(
            name: "PreciseTimerPostgres",
            dependencies: [
                "PreciseTimerCalendar",
                "PreciseTimerCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .executableTarget(
            name: "example-ticker",
            dependencies: [
                "PreciseTimer",
                "PreciseTimerReference",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "examples/example-ticker"
        ),
        .target(
            name: "PreciseTimerServiceLifecycle",
            dependencies: [
                "PreciseTimer",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "example-daemon",
            dependencies: [
                "PreciseTimer",
                "PreciseTimerCalendar",
                "PreciseTimerServiceLifecycle",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "examples/example-daemon"
        ),
        // A job runner for a directory of systemd .timer files; its sample units are not sources.
        .executableTarget(
            name: "example-cron",
            dependencies: [
                "PreciseTimer",
                "PreciseTimerCalendar",
                "PreciseTimerServiceLifecycle",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
                // --postgres URL: a fleet member; makes `swift run example-cron` build postgres-nio.
                + (skipPostgres
                    ? [] : ["PreciseTimerPostgres", .product(name: "PostgresNIO", package: "postgres-nio")]),
            path: "examples/example-cron",
            exclude: ["units", "README.md"],
            swiftSettings: skipPostgres ? [.define("PRECISE_TIMER_NO_POSTGRES")] : []
        ),
        .executableTarget(
            name: "precise-stress",
            dependencies: [
                "PreciseTimer",
                "PreciseTimerCalendar",
                "PreciseTimerReference",
                "PreciseTimerTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "precise-churn",
            dependencies: ["PreciseTimer"]
        ),
        // Spawned by the lifecycle tests: a daemon of two timer services and a server stand-in,
        // stopped by SIGTERM at random moments of its start.
        .executableTarget(
            name: "precise-daemon-probe",
            dependencies: [
                "PreciseTimer",
                "PreciseTimerServiceLifecycle",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "PreciseTimerTests",
            // CLibevent: the caller's-base tests build and drive a base as a libevent daemon does.
            dependencies: [
                "CLibevent", "PreciseTimer", "PreciseTimerReference", "PreciseTimerTesting", "PreciseTimerCalendar",
                "PreciseTimerCompat",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]
        ),
        // The registry on its own (tables, heap, due runs, lazy extension, invariants): builds
        // without libevent.
        .testTarget(
            name: "PreciseTimerCoreTests",
            dependencies: ["PreciseTimerCore", "PreciseTimerTesting", "PreciseTimerCompat"]
        ),
        // Every Swift example of README.md and of the DocC articles, compiled, and a test that they
        // cannot drift apart.
        .testTarget(
            name: "DocumentationTests",
            dependencies: [
                "CLibevent", "PreciseTimer", "PreciseTimerTesting", "PreciseTimerCalendar", "PreciseTimerCompat",
                "PreciseTimerServiceLifecycle", "PreciseTimerMetrics",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "PreciseTimerCalendarTests",
            dependencies: ["PreciseTimerCalendar", "PreciseTimerTesting"],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "PreciseTimerMetricsTests",
            dependencies: [
                "PreciseTimer", "PreciseTimerMetrics", "PreciseTimerTesting",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "PreciseTimerServiceLifecycleTests",
            dependencies: [
                "PreciseTimer",
                "PreciseTimerServiceLifecycle",
                "PreciseTimerTesting",
                // Not linked for their code: built so the SIGTERM, job-runner and restart-loop
                // tests can spawn them.
                "precise-daemon-probe",
                "example-cron",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]
        ),
        // Against a real PostgreSQL: scripts/with-postgres starts one and sets PRECISE_TIMER_POSTGRES_URL;
        // without it the suite is skipped.
        .testTarget(
            name: "PreciseTimerPostgresTests",
            dependencies: [
                "PreciseTimerPostgres", "PreciseTimerCalendar", "PreciseTimerCore", "PreciseTimerTesting",
                // Not linked for its code: built so the fleet test can spawn its replicas.
                "example-cron",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}

// scripts/check-sanitizers sets PRECISE_TIMER_SKIP_POSTGRES_TESTS: its runs start no PostgreSQL (that suite
// would only be skipped), and building postgres-nio's stack (SwiftNIO, swift-nio-ssl, swift-crypto and
// their BoringSSL copies) under each sanitizer took about 6 CPU-minutes here.
if skipPostgres {
    package.targets.removeAll { $0.name == "PreciseTimerPostgresTests" }
}
