// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "PreciseTimer",
    products: [
        .library(name: "PreciseTimer", targets: ["PreciseTimer"]),
        .library(name: "PreciseTimerReference", targets: ["PreciseTimerReference"]),
        .library(name: "PreciseTimerTesting", targets: ["PreciseTimerTesting"]),
        .executable(name: "example-ticker", targets: ["example-ticker"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2")
    ],
    targets: [
        .systemLibrary(
            name: "CLibevent",
            path: "CLibevent",
            pkgConfig: "libevent_core",
            providers: [.apt(["libevent-dev"])]
        ),
        .target(
            name: "PreciseTimer",
            dependencies: ["CLibevent"]
        ),
        .target(
            name: "PreciseTimerReference",
            dependencies: ["PreciseTimer"]
        ),
        .target(
            name: "PreciseTimerTesting",
            dependencies: ["PreciseTimer"]
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
        .executableTarget(
            name: "precise-stress",
            dependencies: [
                "PreciseTimer",
                "PreciseTimerReference",
                "PreciseTimerTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "precise-churn",
            dependencies: ["PreciseTimer"]
        ),
        .testTarget(
            name: "PreciseTimerTests",
            dependencies: ["PreciseTimer", "PreciseTimerReference", "PreciseTimerTesting"]
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
