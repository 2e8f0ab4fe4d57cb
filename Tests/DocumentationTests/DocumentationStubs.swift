import CoreMetrics
import Dispatch
import Logging
import PreciseTimer
import ServiceLifecycle

// Stand-ins for what the documentation's examples take for granted: a daemon's own types, values
// and functions, and the few package names a manifest fragment uses. Only their types matter;
// nothing here runs.

// MARK: A daemon's functions and values

func log(_ message: String) {}
func expire() {}
func expire(_ id: TimerID) {}
func expireSession() {}
func flush() {}
func report() {}
func poll() {}
func step() {}
func beat() {}
func rotateKeys() {}
func renew() {}
func renewCertificate() {}
func backup(_ occurrence: WallClockInstant) {}
func runBackup(for occurrence: WallClockInstant) {}
func rotateLogs(for occurrence: WallClockInstant?) async {}

let flushQueue = DispatchQueue(label: "flush")
let renewAt = WallClockInstant(nanosecondsSinceEpoch: 1_800_000_000_000_000_000)
let midnight = WallClockInstant(nanosecondsSinceEpoch: 1_767_225_600_000_000_000)
let certificate = Certificate(notAfter: renewAt)
let config = Config()
let database = Database()
let store = Store()
let session = UserSession(id: "session-7")
let poller = Poller()
let logger = Logger(label: "docs")
let sessions = StubService()
let httpServer = StubService()
let server = StubService()
let sessionService = StubService()
nonisolated(unsafe) var done = false
nonisolated(unsafe) var backups = 0

struct Certificate: Sendable {
    let notAfter: WallClockInstant
}

struct Config: Sendable {
    func double(_ key: String) -> Double { 1.5 }
}

struct Database: Sendable {
    func query(_ sql: String) async throws -> String { sql }
}

final class Store: Sendable {
    func expire(_ id: String) {}
    func open(_ id: String) {}
    func evictExpired() {}
}

struct UserSession: Sendable {
    let id: String
}

final class Poller: Sendable {
    func poll() {}
}

/// A session that expires after `idleTimeout` without a touch, on any timer service.
final class Session: Sendable {
    private let expiry: TimerHandle?
    private let timers: any TimerService

    init(timers: any TimerService, idleTimeout: Duration) {
        self.timers = timers
        self.expiry = try? timers.scheduleTimer(.after(idleTimeout)) { _ in }
    }

    var isExpired: Bool { self.expiry.map { !self.timers.isScheduled($0.id) } ?? true }
}

struct StubService: Service {
    func run() async throws {}
}

// MARK: Stand-ins for modules the tests do not build

/// swift-prometheus' factory, as far as the metrics example uses it (the package does not depend
/// on swift-prometheus).
struct PrometheusMetricsFactory: MetricsFactory {
    var durationHistogramBuckets: [String: [Duration]] = [:]

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        NOOPMetricsHandler.instance
    }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        NOOPMetricsHandler.instance
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        NOOPMetricsHandler.instance
    }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}

/// PackageDescription's `.target(name:dependencies:)` and `.product(name:package:)`, so a manifest
/// fragment type-checks as an array element.
struct ManifestStub {
    static func target(name: String, dependencies: [ManifestStub]) -> ManifestStub { ManifestStub() }
    static func product(name: String, package: String) -> ManifestStub { ManifestStub() }
}
