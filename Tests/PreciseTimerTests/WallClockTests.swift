import PreciseTimer
import PreciseTimerTesting
import Testing

/// Every `interval` on the wall clock, at whole multiples of it since the epoch (a calendar
/// schedule's simplest kind), optionally ending after `until`.
struct EveryWallClockInterval: WallClockSchedule {
    let interval: Int64
    var offset: Int64 = 0
    var until: Int64 = .max

    func next(after instant: WallClockInstant) -> WallClockInstant? {
        let t = instant.nanosecondsSinceEpoch - self.offset
        let next = (t / self.interval + 1) * self.interval + self.offset
        return next <= self.until ? WallClockInstant(nanosecondsSinceEpoch: next) : nil
    }
}

private let minute: Int64 = 60_000_000_000

/// Wall-clock and continuous timers on virtual time: steps, suspend and calendars, exactly.
@Suite("Wall-clock and continuous timers (virtual time)")
struct WallClockTests {
    /// A service whose wall clock starts at 2026-01-01T00:00:30Z (half a minute past).
    private func service() -> TestTimerService {
        TestTimerService(wallClock: TestTimerService.defaultWallClock.advanced(by: .seconds(30)))
    }

    @Test("a wall-clock one-shot fires when the wall clock reaches it, exactly, and says which instant")
    func atWallClock() throws {
        let timers = self.service()
        defer { timers.shutdown() }
        let instant = timers.wallClockNow.advanced(by: .seconds(90))
        let ticks = Recorder<Tick>()
        try timers.schedule(id: "rotate", atWallClock: instant) { ticks.append($0) }
        try timers.advance(by: .seconds(89))
        #expect(ticks.values.isEmpty)
        try timers.advance(by: .seconds(1))
        let tick = try #require(ticks.values.first)
        #expect(tick.wallClockDeadline == instant)
        #expect(tick.lateness == .zero)
        #expect(timers.scheduledCount == 0)
    }

    @Test("a step forward past the instant fires it at once; a step back makes it wait")
    func steps() throws {
        let timers = self.service()
        defer { timers.shutdown() }
        let start = timers.wallClockNow
        let ticks = Recorder<Tick>()
        try timers.schedule(id: "forward", atWallClock: start.advanced(by: .seconds(3600))) { ticks.append($0) }
        try timers.schedule(id: "back", atWallClock: start.advanced(by: .seconds(60))) { ticks.append($0) }
        // Back by an hour: "back" is now 61 minutes away on the monotonic clock.
        timers.setWallClock(to: start.advanced(by: .seconds(-3600)))
        try timers.advance(by: .seconds(3600))
        #expect(ticks.values.isEmpty, "nothing may fire before the wall clock reaches it")
        try timers.advance(by: .seconds(60))
        #expect(ticks.values.map(\.id) == ["back"])
        // Forward two hours at once (to start + 2 h 1 min): "forward" is due, 61 minutes late.
        timers.setWallClock(to: timers.wallClockNow.advanced(by: .seconds(7200)))
        #expect(ticks.values.map(\.id) == ["back", "forward"])
        #expect(ticks.values.last?.lateness == .seconds(3660))
    }

    @Test("a calendar timer fires at each occurrence, on the wall clock")
    func calendar() throws {
        let timers = self.service()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        try timers.scheduleRepeating(id: "minutely", on: EveryWallClockInterval(interval: minute)) { ticks.append($0) }
        try timers.advance(by: .seconds(30 + 120))
        let first = TestTimerService.defaultWallClock.advanced(by: .seconds(60))
        #expect(
            ticks.values.map(\.wallClockDeadline) == [
                first, first.advanced(by: .seconds(60)), first.advanced(by: .seconds(120)),
            ])
        #expect(ticks.values.map(\.missed) == [0, 0, 0])
        #expect(ticks.values.allSatisfy { $0.lateness == .zero })
    }

    @Test("suspend: .skip makes one call for the latest occurrence and counts the others")
    func suspendSkip() throws {
        let timers = self.service()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        try timers.scheduleRepeating(id: "m", on: EveryWallClockInterval(interval: minute)) { ticks.append($0) }
        timers.suspend(for: .seconds(600))  // to 00:10:30: occurrences 00:01 … 00:10 pass asleep
        #expect(ticks.values.count == 1)
        #expect(ticks.values.first?.missed == 9)
        #expect(ticks.values.first?.wallClockDeadline == TestTimerService.defaultWallClock.advanced(by: .seconds(600)))
        try timers.advance(by: .seconds(60))
        #expect(ticks.values.count == 2)
        #expect(ticks.values.last?.missed == 0)
    }

    @Test("suspend: .burst makes one call per occurrence, in order, at most maximumBurst in a row")
    func suspendBurst() throws {
        let timers = self.service()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        try timers.scheduleRepeating(
            id: "m", on: EveryWallClockInterval(interval: minute), options: .init(missedTicks: .burst)
        ) { ticks.append($0) }
        timers.suspend(for: .seconds(300))  // to 00:05:30
        let first = TestTimerService.defaultWallClock.advanced(by: .seconds(60))
        #expect(ticks.values.map(\.wallClockDeadline) == (0..<5).map { first.advanced(by: .seconds(60 * $0)) })
        timers.suspend(for: .seconds(60 * 40))  // to 00:45:30: 00:06 … 00:45 pending
        #expect(ticks.values.count == 5 + 1 + MissedTickPolicy.maximumBurst, "16 catch-up calls, then one skip")
        #expect(ticks.values.last?.missed ?? 0 > 0)
        #expect(
            ticks.values.last?.wallClockDeadline == TestTimerService.defaultWallClock.advanced(by: .seconds(60 * 45)))
    }

    @Test("an occurrence never fires twice, even when the clock is stepped back over it")
    func noRefire() throws {
        let timers = self.service()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        try timers.scheduleRepeating(id: "m", on: EveryWallClockInterval(interval: minute)) { ticks.append($0) }
        try timers.advance(by: .seconds(30))  // 00:01 fires
        timers.setWallClock(to: TestTimerService.defaultWallClock)  // back to 00:00
        try timers.advance(by: .seconds(60))  // the wall clock passes 00:01 again
        #expect(ticks.values.count == 1)
        try timers.advance(by: .seconds(60))  // 00:02
        #expect(
            ticks.values.map(\.wallClockDeadline) == [
                TestTimerService.defaultWallClock.advanced(by: .seconds(60)),
                TestTimerService.defaultWallClock.advanced(by: .seconds(120)),
            ])
    }

    @Test("a schedule with no occurrence after now is .invalidSchedule; one that runs out ends its timer")
    func schedulesThatEnd() throws {
        let timers = self.service()
        defer { timers.shutdown() }
        let past = EveryWallClockInterval(
            interval: minute, until: TestTimerService.defaultWallClock.nanosecondsSinceEpoch)
        let error = #expect(throws: PreciseTimerError.self) {
            try timers.scheduleRepeating(on: past) { _ in }
        }
        #expect(error?.code == .invalidSchedule)
        #expect(timers.scheduledCount == 0)
        var canary: Canary? = Canary()
        let probe = WeakProbe(canary!)
        let twice = EveryWallClockInterval(
            interval: minute, until: TestTimerService.defaultWallClock.nanosecondsSinceEpoch + 2 * minute)
        let calls = Recorder<Int>()
        try timers.scheduleRepeating(id: "twice", on: twice) { [canary] _ in
            withExtendedLifetime(canary) { calls.append(1) }
        }
        canary = nil
        try timers.advance(by: .seconds(600))
        #expect(calls.values.count == 2)
        #expect(!timers.isScheduled("twice"))
        #expect(probe.isReleased, "the handler is released when the schedule runs out")
    }

    @Test("continuous timers run through suspend; suspending ones stand still")
    func continuousClock() throws {
        let timers = self.service()
        defer { timers.shutdown() }
        let fired = Recorder<TimerID>()
        try timers.schedule(id: "continuous", after: .seconds(600), options: .init(clock: .continuous)) {
            fired.append($0.id)
        }
        try timers.schedule(id: "suspending", after: .seconds(600)) { fired.append($0.id) }
        let ticks = Recorder<Tick>()
        try timers.scheduleRepeating(id: "beat", every: .seconds(60), options: .init(clock: .continuous)) {
            ticks.append($0)
        }
        timers.suspend(for: .seconds(6 * 3600))
        #expect(fired.values == ["continuous"])
        #expect(ticks.values.count == 1)
        #expect(ticks.values.first?.missed == 359, "6 hours of 1-minute periods: one call, 359 skipped")
        #expect(timers.isScheduled("suspending"))
        try timers.advance(by: .seconds(600))
        #expect(fired.values == ["continuous", "suspending"])
        #expect(ticks.values.count == 11)
        #expect(ticks.values.dropFirst().allSatisfy { $0.missed == 0 && $0.lateness == .zero }, "back on its grid")
    }

    @Test("pause, cancel, tokens and deadlines work on wall-clock timers")
    func control() throws {
        let timers = self.service()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        let handle = try timers.scheduleTimer(.atWallClock(timers.wallClockNow.advanced(by: .seconds(60)))) {
            ticks.append($0)
        }
        #expect(timers.deadline(of: handle.id) == timers.now.advanced(by: .seconds(60)))
        #expect(timers.pause(handle.id))
        try timers.advance(by: .seconds(120))
        #expect(ticks.values.isEmpty)
        #expect(timers.resume(handle.id))
        try timers.advance(by: .seconds(60))  // resumed with the 60 s it had left
        #expect(ticks.values.count == 1)
        do {
            let token = try timers.scheduleTimer(.on(EveryWallClockInterval(interval: minute))) { ticks.append($0) }
                .token(on: timers)
            #expect(timers.scheduledCount == 1)
            withExtendedLifetime(token) {}
        }
        #expect(timers.scheduledCount == 0, "the token ended its timer as it went")
    }

    @Test("wall-clock instants beyond reach are .invalidDelay")
    func badInstants() throws {
        let timers = self.service()
        defer { timers.shutdown() }
        for instant in [WallClockInstant(nanosecondsSinceEpoch: .max), WallClockInstant(nanosecondsSinceEpoch: .min)] {
            let error = #expect(throws: PreciseTimerError.self) {
                try timers.schedule(atWallClock: instant) { _ in }
            }
            #expect(error?.code == .invalidDelay)
        }
        #expect(timers.scheduledCount == 0)
    }

    @Test("the article's example: a nightly job through a step back and three days asleep")
    func articleExample() throws {
        let midnight = TestTimerService.defaultWallClock
        let timers = TestTimerService(wallClock: midnight)
        defer { timers.shutdown() }
        let calls = Recorder<Tick>()
        let daily = EveryWallClockInterval(interval: 86_400 * 1_000_000_000, offset: 3 * 3600 * 1_000_000_000)
        try timers.scheduleRepeating(on: daily) { calls.append($0) }
        try timers.advance(by: .seconds(3 * 3600))
        #expect(calls.values.count == 1)
        timers.setWallClock(to: midnight)
        try timers.advance(by: .seconds(3 * 3600))
        #expect(calls.values.count == 1, "03:00 on that day already fired")
        timers.setWallClock(to: midnight)
        timers.suspend(for: .seconds(3 * 86_400))
        #expect(calls.values.count == 2)
        #expect(calls.values.last?.missed == 1)
    }
}
