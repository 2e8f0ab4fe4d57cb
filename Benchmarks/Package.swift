// swift-tools-version:6.1
import Foundation
import PackageDescription

// SwiftPM names a path dependency after its folder, which is whatever the clone was called.
let mainPackage = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .lastPathComponent

// Kept out of the main package so that depending on PreciseTimer never pulls in SwiftNIO or
// HdrHistogram. Run: swift run -c release --package-path Benchmarks precise-bench [--quick] [--json]
let package = Package(
    name: "PreciseTimerBenchmarks",
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
    ],
    targets: [
        .target(name: "CFloor"),
        .executableTarget(
            name: "precise-bench",
            dependencies: [
                "CFloor",
                .product(name: "PreciseTimer", package: mainPackage),
                .product(name: "PreciseTimerReference", package: mainPackage),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .system && target.name != "CFloor" {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
