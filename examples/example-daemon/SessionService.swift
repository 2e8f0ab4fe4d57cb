import Logging
import PreciseTimer
import ServiceLifecycle
import Synchronization

/// The daemon's own service: drives touches at a steady rate and prints a stats line every
/// `statsInterval`, until graceful shutdown (or `runLength`), then prints the final line.
///
/// It is listed after the timer services in the `ServiceGroup`, so it stops first, while the
/// timers still run.
struct SessionService: Service {
    let store: SessionStore
    let heartbeat: Heartbeat
    /// Touches per second.
    let touchRate: Int
    let statsInterval: Duration
    /// Stop by itself after this long (the group then shuts down gracefully); `nil` for never.
    let runLength: Duration?
    let lanes: String
    /// The sessions lane's loop wake-ups so far.
    let sessionWakeUps: WakeUpCounter
    let logger: Logger
    /// The process's CPU time when the service was created.
    let cpuAtStart = CPUTime.now()
    let previous = PreviousLine()

    func run() async {
        let started = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.drive() }
            group.addTask { await self.report(startedAt: started) }
            if let runLength = self.runLength {
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: runLength) }
            } else {
                try? await gracefulShutdown()
            }
            self.previous.stoppedAt = .now
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

    /// Touches random sessions at `touchRate` per second, in a batch every millisecond, catching
    /// up on the schedule (rate × elapsed) so a late wake-up does not lower the rate.
    private func drive() async {
        guard self.touchRate > 0 else { return }
        let clock = ContinuousClock()
        let start = clock.now
        var done = 0
        var random = SplitMix64(seed: 0x5EED)
        var next = start
        while !Task.isCancelled {
            next = next.advanced(by: .milliseconds(1))
            try? await Task.sleep(until: next, clock: clock)
            let elapsed = Format.seconds(clock.now - start)
            let due = Int(elapsed * Double(self.touchRate))
            while done < due {
                self.store.touch(Int(random.next() % UInt64(self.store.count)))
                done += 1
            }
        }
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
        let at: ContinuousClock.Instant
        init(expiries: Int, wakeUps: Int, cpu: CPUTime, at: ContinuousClock.Instant) {
            self.expiries = expiries
            self.wakeUps = wakeUps
            self.cpu = cpu
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
    /// heartbeat's lateness and missed ticks since the last line, the worst expiry lateness, CPU.
    /// With `whole`, the heartbeat and CPU figures cover the whole run.
    private func printStats(label: String, elapsed: Duration, whole: Bool = false) {
        let now = ContinuousClock.now
        let cpu = CPUTime.now()
        let expiries = self.store.expiryCount
        let wakeUps = self.sessionWakeUps.wakeUps
        let start = Previous(expiries: 0, wakeUps: 0, cpu: self.cpuAtStart, at: now - elapsed)
        let previous = self.previous.line.withLock { previous in
            defer { previous = Previous(expiries: expiries, wakeUps: wakeUps, cpu: cpu, at: now) }
            return whole ? start : (previous ?? start)
        }
        let window = whole ? self.heartbeat.takeWhole() : self.heartbeat.take()
        let wall = Format.seconds(now - previous.at)
        let cpuPercent = wall > 0 ? Format.seconds((cpu - previous.cpu).total) / wall * 100 : 0
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
                + " sessions-wakeups=\(Format.fixed(wall > 0 ? Double(wakeUps - previous.wakeUps) / wall : 0, 0))/s"
                + " cpu=\(Format.fixed(cpuPercent, 1))%")
    }
}

/// A small, fast, seedable generator: a touch must cost a reschedule, not a random number.
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) {
        self.state = seed
    }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
