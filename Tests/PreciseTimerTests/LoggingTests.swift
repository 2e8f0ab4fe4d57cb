import Dispatch
import Glibc
import InMemoryLogging
import Logging
import PreciseTimer
import PreciseTimerTesting
import Testing

/// What a service logs (``PreciseTimer/Configuration/logger``): exact lines on virtual time, and
/// the same lines from the libevent engine with generous timing.
@Suite("Logging")
struct LoggingTests {
    /// A logger that keeps every line at `level` and above, and the handler to read them from.
    private static func memoryLogger(level: Logger.Level = .trace) -> (Logger, InMemoryLogHandler) {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "test", factory: { _ in handler })
        logger.logLevel = level
        return (logger, handler)
    }

    /// A virtual-time service logging to `logger`.
    private static func testService(_ logger: Logger, stallThreshold: Duration = .milliseconds(1)) -> TestTimerService {
        TestTimerService(instruments: TimerInstruments(logger: logger, metrics: nil, stallThreshold: stallThreshold))
    }

    // MARK: Configuration

    @Test("the default configuration logs nowhere: a no-op handler, never LoggingSystem")
    func silentByDefault() {
        let configuration = PreciseTimer.Configuration()
        #expect(configuration.logger.handler is SwiftLogNoOpLogHandler)
        #expect(configuration.logger.logLevel == .critical)
        #expect(configuration.stallThreshold == .milliseconds(1))
        #expect(configuration.metrics == nil)
    }

    @Test("a stall threshold that is not greater than zero is an invalid configuration")
    func badStallThreshold() {
        for threshold in [Duration.zero, .nanoseconds(-1), .seconds(Int64.max)] {
            #expect(throws: PreciseTimerError.self) {
                do {
                    _ = try PreciseTimer(configuration: .init(stallThreshold: threshold))
                } catch let error as PreciseTimerError {
                    #expect(error.code == .invalidConfiguration)
                    #expect(error.value?.hasPrefix("stallThreshold") == true)
                    throw error
                }
            }
        }
    }

    // MARK: Virtual time: exact lines

    @Test("a .loop handler that runs past the stall threshold logs exactly one warning, with its ID and duration")
    func stallWarning() throws {
        let (logger, handler) = Self.memoryLogger()
        let service = Self.testService(logger)
        let queue = DispatchQueue(label: "stall-test")
        try service.schedule(id: "slow", after: .milliseconds(10)) { [unowned service] _ in
            service.moveClock(to: service.now.advanced(by: .milliseconds(5)))
        }
        try service.schedule(id: "quick", after: .milliseconds(20)) { [unowned service] _ in
            service.moveClock(to: service.now.advanced(by: .microseconds(999)))
        }
        // Off the loop it stalls nobody: no warning.
        try service.schedule(id: "queued", after: .milliseconds(30), options: .init(executor: .queue(queue))) {
            [unowned service] _ in
            service.moveClock(to: service.now.advanced(by: .milliseconds(50)))
        }
        try service.advance(by: .seconds(1))

        let warnings = handler.entries.filter { $0.level == .warning }
        #expect(warnings.count == 1)
        #expect(handler.entries.count == 1, "\(handler.entries)")
        let warning = try #require(warnings.first)
        #expect(warning.metadata["timer.id"] == "slow")
        #expect(warning.metadata["timer.duration"] == "\(Duration.milliseconds(5))")
        #expect(warning.metadata["timer.threshold"] == "\(Duration.milliseconds(1))")
        #expect(warning.metadata["timer.suppressed"] == nil)
    }

    @Test("missed ticks are logged at debug, at most 10 lines per second, the next line counting those left out")
    func missedTicksRateLimited() throws {
        let (logger, handler) = Self.memoryLogger()
        let service = Self.testService(logger)
        try service.scheduleRepeating(id: "ticker", every: .milliseconds(1)) { _ in }
        // 100 stalls of 3 ms within one second: 100 ticks that missed periods.
        for _ in 0..<100 {
            service.moveClock(to: service.now.advanced(by: .milliseconds(3)))
            try service.advance(by: .zero)
        }
        var lines = handler.entries
        #expect(lines.count == TimerInstruments.linesPerSecond)
        #expect(lines.allSatisfy { $0.level == .debug && $0.metadata["timer.id"] == "ticker" })
        #expect(lines.allSatisfy { $0.metadata["timer.missed"] == "2" && $0.metadata["timer.lateness"] != nil })
        #expect(lines.allSatisfy { $0.metadata["timer.suppressed"] == nil })

        // A second later the next line is let through and says how many were dropped.
        service.moveClock(to: service.now.advanced(by: .seconds(1)))
        try service.advance(by: .zero)
        lines = handler.entries
        #expect(lines.count == TimerInstruments.linesPerSecond + 1)
        let last = try #require(lines.last)
        #expect(last.metadata["timer.suppressed"] == "90")
        #expect(last.metadata["timer.missed"] == "999")
    }

    @Test("missed ticks are not logged above debug, and on-time ticks never are")
    func missedTicksNeedDebug() throws {
        let (logger, handler) = Self.memoryLogger(level: .info)
        let service = Self.testService(logger)
        try service.scheduleRepeating(id: "ticker", every: .milliseconds(1)) { _ in }
        try service.advance(by: .milliseconds(100))
        service.moveClock(to: service.now.advanced(by: .milliseconds(50)))
        try service.advance(by: .zero)
        #expect(handler.entries.isEmpty)
    }

    @Test("a limiter lets the allowed lines through per one-second window")
    func rateLimiter() {
        let limiter = LogRateLimiter(linesPerSecond: 2)
        #expect(limiter.admit(at: 0) == 0)
        #expect(limiter.admit(at: 10) == 0)
        #expect(limiter.admit(at: 20) == nil)
        #expect(limiter.admit(at: 999_999_999) == nil)
        #expect(limiter.admit(at: 1_000_000_000) == 2)
        #expect(limiter.admit(at: 1_000_000_001) == 0)
        #expect(limiter.admit(at: 1_000_000_002) == nil)
    }

    // MARK: The libevent engine

    @Test("start and shutdown are logged once each, at debug")
    func startAndStop() async throws {
        let (logger, handler) = Self.memoryLogger()
        let timers = try PreciseTimer(configuration: .init(threadName: "log-test", logger: logger))
        let started = try #require(handler.entries.first)
        #expect(handler.entries.count == 1)
        #expect(started.level == .debug)
        #expect(started.metadata["timer.thread"] == "log-test")
        timers.shutdown()
        timers.shutdown()
        #expect(handler.entries.count == 2)
        #expect(handler.entries.last?.level == .debug)
        #expect(handler.entries.last?.message.description == "Timer service shut down")
    }

    @Test("the async shutdown logs the shutdown too, once, however the two forms are mixed")
    func asyncShutdownLogged() async throws {
        let (logger, handler) = Self.memoryLogger()
        let timers = try PreciseTimer(configuration: .init(threadName: "log-test", logger: logger))
        #expect(await timers.shutdown(gracePeriod: .seconds(5)))
        timers.shutdown()
        #expect(await timers.shutdown(gracePeriod: .seconds(5)))
        #expect(handler.entries.map(\.message.description) == ["Timer service started", "Timer service shut down"])
    }

    @Test("at info, a normal run (schedule, fire, cancel, shutdown) logs nothing")
    func quietAtInfo() async throws {
        let (logger, handler) = Self.memoryLogger(level: .info)
        // A threshold no empty handler reaches, even preempted on a loaded machine.
        let timers = try PreciseTimer(configuration: .init(logger: logger, stallThreshold: .seconds(5)))
        let ticks = Recorder<Tick>()
        try timers.scheduleRepeating(id: "beat", every: .milliseconds(1)) { ticks.append($0) }
        try timers.schedule(id: "gone", after: .seconds(3_600)) { _ in }
        await ticks.wait(forCount: 20)
        timers.cancel("gone")
        timers.shutdown()
        #expect(handler.entries.isEmpty, "\(handler.entries)")
    }

    @Test("a .loop handler that blocks the loop thread logs one warning naming it")
    func stallOnTheLoop() async throws {
        let (logger, handler) = Self.memoryLogger(level: .warning)
        let timers = try PreciseTimer(configuration: .init(logger: logger, stallThreshold: .milliseconds(20)))
        defer { timers.shutdown() }
        let done = Recorder<Bool>()
        try timers.schedule(id: "blocker", after: .milliseconds(1)) { _ in
            usleep(60_000)
            done.append(true)
        }
        await done.wait(forCount: 1)
        let found = await Self.wait { handler.entries.contains { $0.metadata["timer.id"] == "blocker" } }
        #expect(found)
        let warnings = handler.entries.filter { $0.metadata["timer.id"] == "blocker" }
        #expect(warnings.count == 1)
        let warning = try #require(warnings.first)
        #expect(warning.level == .warning)
        #expect(warning.metadata["timer.threshold"] == "\(Duration.milliseconds(20))")
        #expect(warning.metadata["timer.duration"] != nil)
    }

    @Test("a 1 ms ticker that overruns every period writes a bounded number of missed-tick lines")
    func missedTicksOnTheLoop() async throws {
        let (logger, handler) = Self.memoryLogger(level: .debug)
        let timers = try PreciseTimer(configuration: .init(logger: logger, stallThreshold: .seconds(5)))
        defer { timers.shutdown() }
        let missed = Recorder<UInt64>()
        let clock = ContinuousClock()
        let start = clock.now
        try timers.scheduleRepeating(id: "overrun", every: .milliseconds(1)) { tick in
            if tick.missed > 0 { missed.append(tick.missed) }
            usleep(1_500)  // Longer than the period: the next tick has missed one at least.
        }
        await missed.wait(forCount: 40)
        timers.cancel("overrun")
        let elapsed = clock.now - start
        let lines = handler.entries.filter { $0.metadata["timer.id"] == "overrun" }
        let windows = Int(elapsed / .seconds(1)) + 1
        #expect(!lines.isEmpty)
        #expect(lines.count <= windows * TimerInstruments.linesPerSecond, "\(lines.count) lines in \(elapsed)")
        #expect(lines.count < missed.count, "\(lines.count) lines for \(missed.count) ticks that missed")
        #expect(lines.allSatisfy { $0.level == .debug && $0.metadata["timer.missed"] != nil })
    }

    @Test("an engine failure is logged once, at error, naming the libevent call")
    func engineFailure() async throws {
        let (logger, handler) = Self.memoryLogger(level: .error)
        let timers = try PreciseTimer(configuration: .init(logger: logger))
        defer { timers.shutdown() }
        timers.injectEngineFailure(.loop)
        let found = await Self.wait { !handler.entries.isEmpty }
        #expect(found, "no error logged")
        #expect(handler.entries.count == 1)
        let entry = try #require(handler.entries.first)
        #expect(entry.level == .error)
        #expect(entry.metadata["timer.function"] == "event_base_loop")
        #expect(entry.metadata["timer.return_code"] == "-1")
        #expect((entry.error as? PreciseTimerError)?.code == .libeventFailure)
    }

    /// Polls `condition` every millisecond (``Polling/until(timeout:_:)``).
    private static func wait(until condition: () -> Bool) async -> Bool {
        await Polling.until(condition)
    }
}
