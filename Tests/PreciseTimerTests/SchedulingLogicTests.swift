import PreciseTimer
import Testing

/// Schedule math, missed-tick policies, cancellation and the adapters, on a manual clock: no
/// sleeping, exact instants.
@Suite("Scheduling logic (manual driver)")
struct SchedulingLogicTests {
    let ms: Int64 = 1_000_000

    @Test("a one-shot fires once at its exact deadline and is gone before its handler runs")
    func oneShot() throws {
        let driver = ManualTimerDriver()
        let start = driver.now
        let ticks = Recorder<(Tick, Bool)>()
        let timers = driver.timers
        try timers.schedule(id: "once", after: .milliseconds(5)) { tick in
            ticks.append((tick, timers.isScheduled("once")))
        }
        driver.advance(by: .milliseconds(4))
        #expect(ticks.count == 0)
        driver.advance(by: .milliseconds(10))
        #expect(ticks.count == 1)
        let (tick, stillScheduled) = try #require(ticks.values.first)
        #expect(tick.scheduledAt.nanoseconds == start + 5 * self.ms)
        #expect(tick.firedAt == tick.scheduledAt)
        #expect(tick.count == 1 && tick.missed == 0)
        #expect(!stillScheduled)
        #expect(timers.scheduledIDs.isEmpty)
    }

    @Test("a one-shot may reschedule its own ID from its handler")
    func oneShotReusesID() throws {
        let driver = ManualTimerDriver()
        let timers = driver.timers
        let fires = Recorder<UInt64>()
        @Sendable func arm() throws {
            try timers.schedule(id: "again", after: .milliseconds(1)) { _ in
                fires.append(1)
                if fires.count < 3 { try? arm() }
            }
        }
        try arm()
        driver.advance(by: .milliseconds(10))
        #expect(fires.count == 3)
    }

    @Test("repeating deadlines are start + k·interval, first after one interval or startingAfter")
    func repeatingGrid() throws {
        let driver = ManualTimerDriver()
        let start = driver.now
        let plain = Recorder<Tick>()
        let delayed = Recorder<Tick>()
        try driver.timers.scheduleRepeating(every: .milliseconds(10)) { plain.append($0) }
        try driver.timers.scheduleRepeating(every: .milliseconds(10), startingAfter: .milliseconds(3)) {
            delayed.append($0)
        }
        driver.advance(by: .milliseconds(55))
        #expect(plain.values.map(\.scheduledAt.nanoseconds) == (1...5).map { start + $0 * 10 * self.ms })
        #expect(delayed.values.map(\.scheduledAt.nanoseconds) == (0...5).map { start + (3 + $0 * 10) * self.ms })
        #expect(plain.values.map(\.count) == [1, 2, 3, 4, 5])
        #expect(plain.values.allSatisfy { $0.missed == 0 && $0.lateness == .zero })
    }

    @Test("skip: one call after a stall, missed periods counted, phase kept")
    func skipPolicy() throws {
        let driver = ManualTimerDriver()
        let start = driver.now
        let ticks = Recorder<Tick>()
        try driver.timers.scheduleRepeating(every: .milliseconds(10)) { ticks.append($0) }
        driver.advance(by: .milliseconds(10))  // tick 1 at 10 ms
        driver.stall(for: .milliseconds(35))  // now 45 ms: 20, 30, 40 passed
        driver.advance(by: .milliseconds(5))  // 50 ms: back on the grid
        let values = ticks.values
        try #require(values.count == 3)
        #expect(values[1].missed == 2)
        #expect(values[1].scheduledAt.nanoseconds == start + 40 * self.ms)
        #expect(values[1].lateness == .milliseconds(5))
        #expect(values[2].scheduledAt.nanoseconds == start + 50 * self.ms)
        #expect(values[2].missed == 0)
        #expect(values.map(\.count) == [1, 2, 3])
    }

    @Test("burst: one call per missed period, back to back, then the original grid")
    func burstPolicy() throws {
        let driver = ManualTimerDriver()
        let start = driver.now
        let ticks = Recorder<Tick>()
        try driver.timers.scheduleRepeating(every: .milliseconds(10), options: .init(missedTicks: .burst)) {
            ticks.append($0)
        }
        driver.stall(for: .milliseconds(35))
        #expect(ticks.values.map(\.scheduledAt.nanoseconds) == [10, 20, 30].map { start + $0 * self.ms })
        #expect(ticks.values.allSatisfy { $0.missed == 0 })
        driver.advance(by: .milliseconds(5))
        #expect(ticks.values.last?.scheduledAt.nanoseconds == start + 40 * self.ms)
    }

    @Test("a re-armed repeating timer keeps its place among equal deadlines scheduled after it")
    func rearmKeepsOrder() throws {
        let driver = ManualTimerDriver()
        let order = Recorder<TimerID>()
        try driver.timers.scheduleRepeating(id: "repeating", every: .milliseconds(10)) { order.append($0.id) }
        // Due at the repeating timer's second deadline, scheduled after it.
        try driver.timers.schedule(id: "one-shot", after: .milliseconds(20)) { order.append($0.id) }
        driver.advance(by: .milliseconds(20))
        #expect(order.values == ["repeating", "repeating", "one-shot"])
        driver.timers.cancelAll()
    }

    @Test("delay: on-time ticks stay on the grid; after a stall, one call, then the grid restarts from it")
    func delayPolicy() throws {
        let driver = ManualTimerDriver()
        let start = driver.now
        let ticks = Recorder<Tick>()
        try driver.timers.scheduleRepeating(every: .milliseconds(10), options: .init(missedTicks: .delay)) {
            ticks.append($0)
        }
        // On time, but late within the period (a loaded loop): the grid must not slide.
        for _ in 0..<3 {
            driver.stall(for: .milliseconds(10) + .microseconds(33))
        }
        try #require(ticks.count == 3)
        #expect(ticks.values.map(\.scheduledAt.nanoseconds) == [10, 20, 30].map { start + $0 * self.ms })
        #expect(ticks.values.allSatisfy { $0.missed == 0 })
        // Now at 30.099 ms. A stall past two whole periods: one call, answering the latest
        // grid point (50 ms) and reporting 40 as missed, then the grid restarts 10 ms after it.
        driver.stall(for: .milliseconds(25))  // 55.099 ms
        let stalledAt = driver.now
        driver.advance(by: .milliseconds(20))
        let values = ticks.values
        try #require(values.count == 6)
        #expect(values[3].scheduledAt.nanoseconds == start + 50 * self.ms)
        #expect(values[3].missed == 1)
        #expect(values[3].firedAt.nanoseconds == stalledAt)
        #expect(values[4].scheduledAt.nanoseconds == stalledAt + 10 * self.ms)
        #expect(values[5].scheduledAt.nanoseconds == stalledAt + 20 * self.ms)
        #expect(values[4...].allSatisfy { $0.missed == 0 && $0.lateness == .zero })
    }

    @Test("burst: catch-up is bounded; still behind after maximumBurst calls, it skips")
    func burstIsBounded() throws {
        let driver = ManualTimerDriver()
        let start = driver.now
        let ticks = Recorder<Tick>()
        try driver.timers.scheduleRepeating(every: .milliseconds(1), options: .init(missedTicks: .burst)) {
            ticks.append($0)
        }
        driver.stall(for: .milliseconds(100))  // 100 periods behind
        let limit = MissedTickPolicy.maximumBurst
        let values = ticks.values
        // `limit` calls for 1…limit ms, back to back; the next one is still a whole period
        // behind: it skips to the latest grid point (100 ms), reporting the periods dropped.
        try #require(values.count == limit + 1)
        #expect(
            values[..<limit].map(\.scheduledAt.nanoseconds) == (1...limit).map { start + Int64($0) * self.ms })
        #expect(values[..<limit].allSatisfy { $0.missed == 0 })
        #expect(values[limit].scheduledAt.nanoseconds == start + 100 * self.ms)
        #expect(values[limit].missed == UInt64(100 - (limit + 1)))
        driver.advance(by: .milliseconds(1))
        #expect(ticks.values.last?.scheduledAt.nanoseconds == start + 101 * self.ms)
    }

    @Test("a burst timer whose calls outlast its period cannot starve another timer")
    func burstDoesNotStarve() throws {
        let driver = ManualTimerDriver()
        defer { driver.timers.shutdown() }
        let other = Recorder<Tick>()
        try driver.timers.scheduleRepeating(every: .milliseconds(1), options: .init(missedTicks: .burst)) { _ in
            driver.runHandler(forNanoseconds: 2 * 1_000_000)  // every call takes 2 ms
        }
        try driver.timers.scheduleRepeating(every: .milliseconds(10)) { other.append($0) }
        driver.advance(by: .seconds(1))
        // Unbounded catch-up would hold the earliest deadline forever: 0 or 1 calls.
        #expect(other.count >= 20, "the 10 ms timer got \(other.count) calls in 1 s")
    }

    @Test("a handler that outruns its period: the periods it covered count as missed")
    func slowHandler() throws {
        let driver = ManualTimerDriver()
        defer { driver.timers.shutdown() }  // The handler holds the driver: end the timer to break the cycle.
        let start = driver.now
        let ticks = Recorder<Tick>()
        try driver.timers.scheduleRepeating(every: .milliseconds(10)) { tick in
            ticks.append(tick)
            if tick.count == 1 { driver.runHandler(forNanoseconds: 25 * 1_000_000) }  // runs until 35 ms
        }
        driver.advance(by: .milliseconds(10))
        driver.advance(by: .milliseconds(10))  // 45 ms
        #expect(ticks.values.map(\.missed) == [0, 1, 0])
        #expect(ticks.values.map(\.scheduledAt.nanoseconds) == [10, 30, 40].map { start + $0 * self.ms })
        #expect(ticks.values.map(\.count) == [1, 2, 3])
    }

}
