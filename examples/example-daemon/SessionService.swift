import Logging
import PreciseTimer
import ServiceLifecycle
import Synchronization

/// The daemon's own service: runs the touch driver and prints a stats line every
/// `statsInterval`, until graceful shutdown (or `runLength`), then stops the driver and prints
/// the final line.
///
/// It is listed after the timer services (the clients lane included) in the `ServiceGroup`, so it
/// stops first, while the timers still run.
struct SessionService: Service {
    let store: SessionStore
    let heartbeat: Heartbeat
    /// The clients: touches at a steady rate, from the clients lane.
    let driver: TouchDriver
    let statsInterval: Duration
    /// Stop by itself after this long (the group then shuts down gracefully); `nil` for never.
    let runLength: Duration?
    let lanes: String
    /// The sessions lane's loop wake-ups so far.
    let sessionWakeUps: WakeUpCounter
    /// The sessions lane's loop thread's CPU time.
    let sessionsCPU: ThreadCPUTime
    let logger: Logger
    /// The process's CPU time when the service was created.
    let cpuAtStart = CPUTime.now()
    /// The sessions lane's CPU time when the service was created.
    let sessionsCPUAtStart: Duration?
    let previous = PreviousLine()

    init(
        store: SessionStore, heartbeat: Heartbeat, driver: TouchDriver, statsInterval: Duration,
        runLength: Duration?, lanes: String, sessionWakeUps: WakeUpCounter, sessionsCPU: ThreadCPUTime,
        logger: Logger
    ) {
        self.store = store
        self.heartbeat = heartbeat
        self.driver = driver
        self.statsInterval = statsInterval
        self.runLength = runLength
        self.lanes = lanes
        self.sessionWakeUps = sessionWakeUps
        self.sessionsCPU = sessionsCPU
        self.logger = logger
        self.sessionsCPUAtStart = sessionsCPU.now()
    }

    func run() async throws {
        let started = ContinuousClock.now
        try self.driver.start()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.report(startedAt: started) }
            if let runLength = self.runLength {
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: runLength) }
            } else {
                try? await gracefulShutdown()
            }
            self.previous.stoppedAt = .now
            // Touches stop before the final line, so its counts are the run's.
            self.driver.stop()
            group.cancelAll()
        }
        let elapsed = ContinuousClock.now - started
        let cpu = CPUTime.now() - self.cpuAtStart
        self.printStats(label: "final", elapsed: elapsed, whole: true)
        let seconds = Format.seconds(elapsed)
        print(
            "throughput: \(self.store.touchCount) touches (\(Format.fixed(Double(self.store.touchCount) / seconds, 0))/s),"
                + " \(self.store.expiryCount) expiries in \(Format.fixed(seconds, 2))s;"
                + " cpu user \(Format.short(cpu.user)) sys \(Format.short(cpu.system))"
                + " (\(Format.fixed(Format.seconds(cpu.total) / seconds * 100, 1))% of one core)")
        self.logger.info("sessions stopped; the timer services stop next")
    }

    /// Prints a stats line every `statsInterval`.
    private func report(startedAt started: ContinuousClock.Instant) async {
        let clock = ContinuousClock()
        var next = started
        while !Task.isCancelled {
            next = next.advanced(by: self.statsInterval)
            do {
                try await Task.sleep(until: next, clock: clock)
            } catch {
                return
            }
            self.printStats(label: "stats", elapsed: clock.now - started)
        }
    }

    struct Previous {
        let expiries: Int
        let wakeUps: Int
        let cpu: CPUTime
        /// The sessions lane's CPU time; `nil` when its thread could not be read.
        let sessionsCPU: Duration?
        let at: ContinuousClock.Instant
        init(expiries: Int, wakeUps: Int, cpu: CPUTime, sessionsCPU: Duration?, at: ContinuousClock.Instant) {
            self.expiries = expiries
            self.wakeUps = wakeUps
            self.cpu = cpu
            self.sessionsCPU = sessionsCPU
            self.at = at
        }
    }

    /// What the last stats line saw (to print rates since then), and when shutdown began.
    final class PreviousLine: Sendable {
        let line = Mutex<Previous?>(nil)
        private let shutdownBegan = Mutex<ContinuousClock.Instant?>(nil)

        /// When the service was told to stop (graceful shutdown, or the end of `runLength`).
        var stoppedAt: ContinuousClock.Instant? {
            get { self.shutdownBegan.withLock { $0 } }
            set { self.shutdownBegan.withLock { $0 = newValue } }
        }
    }

    /// One line: the population, expiries (total and since the last line), pending timers, the
    /// heartbeat's lateness and missed ticks since the last line, the worst expiry lateness and
    /// the early expiries (expected: none), the sessions lane's wake-ups, the process's CPU and
    /// the sessions lane's own CPU (its loop thread). With `whole`, the heartbeat, wake-up and CPU
    /// figures cover the whole run.
    private func printStats(label: String, elapsed: Duration, whole: Bool = false) {
        let now = ContinuousClock.now
        let cpu = CPUTime.now()
        let sessionsCPU = self.sessionsCPU.now()
        let expiries = self.store.expiryCount
        let wakeUps = self.sessionWakeUps.wakeUps
        let start = Previous(
            expiries: 0, wakeUps: 0, cpu: self.cpuAtStart, sessionsCPU: self.sessionsCPUAtStart, at: now - elapsed)
        let previous = self.previous.line.withLock { previous in
            defer {
                previous = Previous(expiries: expiries, wakeUps: wakeUps, cpu: cpu, sessionsCPU: sessionsCPU, at: now)
            }
            return whole ? start : (previous ?? start)
        }
        let window = whole ? self.heartbeat.takeWhole() : self.heartbeat.take()
        let wall = Format.seconds(now - previous.at)
        let cpuPercent = wall > 0 ? Format.seconds((cpu - previous.cpu).total) / wall * 100 : 0
        var sessionsCPUPercent = "?"
        if let sessionsCPU, let before = previous.sessionsCPU, wall > 0 {
            sessionsCPUPercent = Format.fixed(Format.seconds(sessionsCPU - before) / wall * 100, 1) + "%"
        }
        let beats = window.latenessNanoseconds.count
        print(
            "\(label) t=\(Format.fixed(Format.seconds(elapsed), 1))s"
                + " sessions=\(self.store.count) touches=\(self.store.touchCount)"
                + " expiries=\(expiries) (+\(expiries - previous.expiries))"
                + " pending=\(self.store.pendingTimers)"
                + " heartbeat[\(self.lanes)] p99=\(Format.short(Format.percentile(0.99, of: window.latenessNanoseconds)))"
                + " max=\(Format.short(Format.percentile(1, of: window.latenessNanoseconds)))"
                + " beats=\(beats) missed=\(window.missed)"
                + " expiry-late-max=\(Format.short(whole ? self.store.worstExpiryLatenessSoFar : self.store.takeExpiryLateness()))"
                + " expiry-early=\(self.store.earlyExpiryCount)"
                + " sessions-wakeups=\(Format.fixed(wall > 0 ? Double(wakeUps - previous.wakeUps) / wall : 0, 0))/s"
                + " cpu=\(Format.fixed(cpuPercent, 1))% sessions-cpu=\(sessionsCPUPercent)")
    }
}
