// swift-tools-version:6.2
import Foundation
import PackageDescription

// A separate package, so that depending on PreciseTimer never pulls in SwiftNIO or HdrHistogram.
// Run from the repository root:
//     scripts/with-libevent swift run -c release --package-path Benchmarks precise-bench [--quick] [--json]
//
// SwiftPM names a path dependency after its folder, which is whatever the clone was called.
let mainPackage = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .lastPathComponent

let package = Package(
    name: "PreciseTimerBenchmarks",
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        // The kernel floor: plain C loops on clock_nanosleep and timerfd, nothing in between.
        .target(name: "CFloor"),
        // The limit row of the cost section: PreciseTimer's schedule + cancel work in plain C.
        // ... and, beside it, the raw-libevent peer of the peers section (LibeventPeer.c).
        .target(name: "CLimit", linkerSettings: [.linkedLibrary("event_core")]),
        .executableTarget(
            name: "precise-bench",
            dependencies: [
                "CFloor",
                "CLimit",
                .product(name: "PreciseTimer", package: mainPackage),
                .product(name: "PreciseTimerReference", package: mainPackage),
                .product(name: "PreciseTimerCalendar", package: mainPackage),
                .product(name: "PreciseTimerMetrics", package: mainPackage),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The claim round trip and a fleet's load on PostgresTimerStateStore, against a real server:
        //     scripts/with-postgres swift run -c release --package-path Benchmarks precise-fleet-bench
        .executableTarget(
            name: "precise-fleet-bench",
            dependencies: [
                .product(name: "PreciseTimerCalendar", package: mainPackage),
                .product(name: "PreciseTimerPostgres", package: mainPackage),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .system && !["CFloor", "CLimit"].contains(target.name) {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
