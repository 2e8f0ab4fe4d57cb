import InMemoryLogging
import Logging
import PreciseTimer
import PreciseTimerCalendar
import PreciseTimerTesting
import Synchronization
import Testing

/// Calendar and wall-clock timers at the events they exist for: a clock stepped by a year or
/// corrected back by ten, a schedule that does not advance, a schedule that calls back into the
/// service, and the ticks of a moved, paused or resumed calendar timer.
@Suite("Calendar timers at clock events")
struct CalendarClockEventTests {
    private static let second: Int64 = 1_000_000_000
    private static let day: Int64 = 86_400 * second

    private static func instant(_ seconds: Int64) -> WallClockInstant {
        WallClockInstant(nanosecondsSinceEpoch: seconds * Self.second)
    }

    // MARK: A one-year step

    @Test("a one-year step makes one call of a per-second schedule, in a few hundred questions at most")
    func oneYearStep() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let counting = CountingSchedule(try CalendarSchedule("*:*:0/1 Europe/Berlin"))
        let calls = Recorder<Tick>()
        try timers.scheduleRepeating(id: "every-second", on: counting) { calls.append($0) }
        try timers.advance(by: .seconds(3))
        #expect(calls.count == 3)
        let before = counting.calls
        let stepped = TestTimerService.defaultWallClock.advanced(by: .seconds(365 * 86_400 + 3))
        timers.setWallClock(to: stepped)
        #expect(calls.count == 4, "one call for the latest occurrence, whatever the step")
        let tick = try #require(calls.values.last)
        #expect(tick.wallClockDeadline == stepped)
        // Every second of the year passed: the count walked is a lower bound (the schedule does
        // not count its occurrences), at least what was walked exactly.
        #expect(tick.missed >= 64 && tick.missed <= 365 * 86_400)
        #expect(counting.calls - before < 300, "asked \(counting.calls - before) times (was 7 698 × 4 096)")
        try timers.advance(by: .seconds(2))
        #expect(calls.values.suffix(2).map(\.missed) == [0, 0])
    }

    @Test("the default catch-up finds the latest occurrence exactly and counts a short gap exactly")
    func defaultCatchUp() {
        let every7 = PeriodicSchedule(period: 7 * Self.second)
        let start = Self.instant(0)
        // A short gap: walked, exact.
        let short = every7.occurrences(after: start, notAfter: Self.instant(7 * 40 + 3))
        #expect(short == WallClockCatchUp(latest: Self.instant(7 * 40), passed: 40))
        // A long one: the latest is exact, the count a lower bound.
        let long = every7.occurrences(after: start, notAfter: Self.instant(7 * 1_000_000 + 6))
        #expect(long?.latest == Self.instant(7 * 1_000_000))
        #expect((64...1_000_000).contains(long?.passed ?? 0))
        // Nothing passed.
        #expect(every7.occurrences(after: start, notAfter: Self.instant(6)) == nil)
    }

    @Test("a heartbeat keeps its rate on the real engine while a per-second calendar timer catches up a year")
    func heartbeatThroughOneYearStep() async throws {
        let timers = try PreciseTimer()
        defer { timers.shutdown() }
        let beats = Recorder<Int64>()
        let calendar = Recorder<Tick>()
        try timers.scheduleRepeating(id: "job", on: try CalendarSchedule("*:*:0/1 Europe/Berlin")) {
            calendar.append($0)
        }
        try timers.scheduleRepeating(id: "heartbeat", every: .milliseconds(1)) { _ in
            beats.append(timers.now.nanoseconds)
        }
        await beats.wait(forCount: 50)
        timers.simulateClockChange(wallClockStep: .seconds(365 * 86_400))
        let stepAt = timers.now.nanoseconds
        let caughtUp = await calendar.wait(timeout: .seconds(60)) { ticks in ticks.contains { $0.missed > 0 } }
        let beating = await beats.wait(timeout: .seconds(60)) { $0.last ?? 0 > stepAt + 500_000_000 }
        #expect(caughtUp && beating, "the calendar call or the heartbeat did not come after the step")
        let around = beats.values.filter { $0 > stepAt - 100_000_000 }
        let worstGap = zip(around, around.dropFirst()).map { $1 - $0 }.max() ?? .max
        // Generous for a loaded 2-core machine under a sanitizer, where the whole process can be
        // starved for seconds (6.8 s seen once); its normal figure is about a millisecond
        // (`precise-stress --measure-step`). The walk this replaced froze the loop for 24.6 s.
        #expect(worstGap < 12_000_000_000, "heartbeat's worst gap after the step: \(Duration.nanoseconds(worstGap))")
        #expect(calendar.values.contains { $0.missed >= 64 })
    }

    // MARK: User code outside the lock

    @Test("a schedule may ask the service about its own timer: its questions come outside every lock")
    func scheduleCallsBack() async throws {
        let timers = TestTimerService()
        let probe = ServiceProbe()
        let schedule = ProbingSchedule(period: Self.second, probe: probe)
        try timers.scheduleRepeating(id: "probing", on: schedule) { _ in }
        probe.service.withLock { $0 = timers }
        // On another thread with a deadline: a schedule asked under the registry's lock would
        // deadlock there, and the test fails instead of hanging.
        let finished = await runOnThread(timeout: .seconds(20)) {
            try? timers.advance(by: .seconds(5))
            timers.setWallClock(to: TestTimerService.defaultWallClock.advanced(by: .seconds(3600)))
        }
        #expect(finished, "advance did not return: the schedule was asked under a lock it re-entered")
        guard finished else { return }
        #expect(probe.answers.withLock { $0 }.allSatisfy { $0 }, "the schedule saw its own timer scheduled")
        #expect(probe.answers.withLock { $0.count } >= 6)
        timers.shutdown()
    }

    // MARK: Clock corrected backwards

    @Test("a device corrected from 2036 back to 2026 runs its daily job every day, not in ten years")
    func correctedBackTenYears() throws {
        let timers = TestTimerService(wallClock: Self.instant(2_096_496_000))  // 2036-06-09T00:00Z
        defer { timers.shutdown() }
        let calls = Recorder<Tick>()
        try timers.scheduleRepeating(id: "daily", on: try CalendarSchedule("*-*-* 03:00 UTC")) { calls.append($0) }
        try timers.advance(by: .seconds(4 * 3600))
        #expect(calls.values.map(\.wallClockDeadline) == [Self.instant(2_096_496_000 + 3 * 3600)])
        timers.setWallClock(to: Self.instant(1_795_651_200))  // NTP: 2026-11-26T00:00Z
        try timers.advance(by: .seconds(3 * 86_400))
        #expect(
            calls.values.dropFirst().map(\.wallClockDeadline)
                == (0..<3).map {
                    Self.instant(1_795_651_200 + $0 * 86_400 + 3 * 3600)
                })
    }

    @Test("a step back of two seconds over an occurrence that fired never fires it again")
    func twoSecondCorrection() throws {
        let timers = TestTimerService(wallClock: Self.instant(1_795_651_200 + 3 * 3600 - 10))  // 02:59:50
        defer { timers.shutdown() }
        let calls = Recorder<Tick>()
        try timers.scheduleRepeating(id: "daily", on: try CalendarSchedule("*-*-* 03:00 UTC")) { calls.append($0) }
        try timers.advance(by: .seconds(11))  // 03:00:01: fired
        #expect(calls.count == 1)
        timers.setWallClock(to: Self.instant(1_795_651_200 + 3 * 3600 - 1))  // 02:59:59
        try timers.advance(by: .seconds(3600))
        #expect(calls.count == 1)
        try timers.advance(by: .seconds(86_400))
        #expect(calls.values.map(\.wallClockDeadline).last == Self.instant(1_795_651_200 + 86_400 + 3 * 3600))
    }

    // MARK: Schedules that do not advance

    @Test(
        "a schedule that answers an instant not after the one asked about ends its timer: logged, counted, no loop",
        arguments: BrokenSchedule.Fault.allCases)
    func scheduleThatDoesNotAdvance(_ fault: BrokenSchedule.Fault) async throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "test", factory: { _ in handler })
        logger.logLevel = .error
        let metrics = BrokenScheduleCounter()
        let timers = TestTimerService(
            instruments: TimerInstruments(logger: logger, metrics: metrics, stallThreshold: nil))
        let first = TestTimerService.defaultWallClock.advanced(by: .seconds(10))
        let calls = Recorder<Tick>()
        try timers.scheduleRepeating(id: "broken", on: BrokenSchedule(first: first, fault: fault)) { calls.append($0) }
        let finished = await runOnThread(timeout: .seconds(20)) { try? timers.advance(by: .seconds(60)) }
        #expect(finished, "advance never returned: the occurrence fired over and over")
        guard finished else { return }
        defer { timers.shutdown() }
        #expect(calls.values.map(\.wallClockDeadline) == [first])
        #expect(!timers.isScheduled("broken"))
        #expect(timers.deadline(of: "broken") == nil)
        #expect(metrics.broke.load(ordering: .relaxed) == 1)
        #expect(metrics.ended.load(ordering: .relaxed) == 1)
        let lines = handler.entries.filter { $0.level == .error }
        #expect(lines.count == 1)
        #expect((lines.first?.error as? PreciseTimerError)?.code == .invalidSchedule)
        #expect(lines.first?.metadata["timer.id"] == "broken")
    }

    @Test("a schedule whose first answer is not after now is refused with .invalidSchedule")
    func brokenFromTheStart() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let schedule = BrokenSchedule(first: TestTimerService.defaultWallClock, fault: .same)
        let error = #expect(throws: PreciseTimerError.self) {
            try timers.scheduleRepeating(id: "broken", on: schedule) { _ in }
        }
        #expect(error?.code == .invalidSchedule)
        #expect(timers.scheduledCount == 0)
    }

    // MARK: What a calendar timer's ticks answer

    @Test("an occurrence at Int64.min is reported as such, not as nil")
    func occurrenceAtTheClocksStart() throws {
        let timers = TestTimerService(wallClock: WallClockInstant(nanosecondsSinceEpoch: .min + 10 * Self.second))
        defer { timers.shutdown() }
        let calls = Recorder<Tick>()
        try timers.schedule(atWallClock: WallClockInstant(nanosecondsSinceEpoch: .min)) { calls.append($0) }
        try timers.advance(by: .zero)
        #expect(calls.values.map(\.wallClockDeadline) == [WallClockInstant(nanosecondsSinceEpoch: .min)])
    }

    @Test("a rescheduled calendar call answers no occurrence; the schedule then goes on")
    func rescheduledCalendarTimer() throws {
        let timers = TestTimerService()  // 2026-01-01T00:00Z
        defer { timers.shutdown() }
        let calls = Recorder<Tick>()
        try timers.scheduleRepeating(id: "hourly", on: try CalendarSchedule("hourly UTC")) { calls.append($0) }
        #expect(try timers.reschedule("hourly", after: .seconds(30 * 60)))
        try timers.advance(by: .seconds(2 * 3600 + 60))
        #expect(calls.values.map(\.wallClockDeadline) == [nil, Self.hourOfDefault(1), Self.hourOfDefault(2)])
    }

    @Test("a resumed calendar timer goes on at its schedule's next occurrence, not at the time it had left")
    func resumedCalendarTimer() throws {
        let timers = TestTimerService()  // 2026-01-01T00:00Z
        defer { timers.shutdown() }
        let calls = Recorder<Tick>()
        try timers.scheduleRepeating(id: "hourly", on: try CalendarSchedule("hourly UTC")) { calls.append($0) }
        try timers.advance(by: .seconds(10 * 60))
        #expect(timers.pause("hourly"))
        try timers.advance(by: .seconds(2 * 3600 + 20 * 60))  // 02:30: 01:00 and 02:00 passed paused
        #expect(calls.count == 0)
        #expect(timers.resume("hourly"))
        try timers.advance(by: .seconds(3600))
        #expect(calls.values.map(\.wallClockDeadline) == [Self.hourOfDefault(3)])
        #expect(calls.values.map(\.missed) == [0])
    }

    @Test("wallClockDeadline(of:) tells a wall-clock timer's next occurrence, and nil when none is known")
    func wallClockDeadlineOf() throws {
        let timers = TestTimerService()  // 2026-01-01T00:00Z
        defer { timers.shutdown() }
        try timers.scheduleRepeating(id: "hourly", on: try CalendarSchedule("hourly UTC")) { _ in }
        let renewAt = TestTimerService.defaultWallClock.advanced(by: .seconds(86_400))
        try timers.schedule(id: "renew", atWallClock: renewAt) { _ in }
        try timers.schedule(id: "timeout", after: .seconds(5)) { _ in }
        #expect(timers.wallClockDeadline(of: "hourly") == Self.hourOfDefault(1))
        #expect(timers.wallClockDeadline(of: "renew") == renewAt)
        #expect(timers.wallClockDeadline(of: "timeout") == nil, "not on the wall clock")
        #expect(timers.wallClockDeadline(of: "nothing") == nil)
        try timers.advance(by: .seconds(3600 + 60))
        #expect(timers.wallClockDeadline(of: "hourly") == Self.hourOfDefault(2))
        #expect(timers.pause("hourly"))
        #expect(timers.wallClockDeadline(of: "hourly") == nil, "paused")
        try timers.advance(by: .seconds(2 * 3600))  // 03:01
        #expect(timers.resume("hourly"))
        try timers.advance(by: .zero)  // the service asks the schedule again
        #expect(timers.wallClockDeadline(of: "hourly") == Self.hourOfDefault(4))
    }

    // MARK: scheduleOrReschedule's clock

    @Test("scheduleOrReschedule keeps options.clock: a .continuous session expires through a suspend")
    func scheduleOrRescheduleKeepsTheClock() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let expired = Recorder<String>()
        let continuous = TimerOptions(clock: .continuous)
        #expect(
            try timers.scheduleOrReschedule(id: "made", after: .seconds(60), options: continuous) { _ in
                expired.append("made")
            })
        // A touch of the existing session moves it and keeps its clock.
        #expect(!(try timers.scheduleOrReschedule(id: "made", after: .seconds(90), options: continuous) { _ in }))
        try timers.schedule(id: "scheduled", after: .seconds(90), options: continuous) { _ in
            expired.append("scheduled")
        }
        timers.suspend(for: .seconds(120))
        #expect(Set(expired.values) == ["made", "scheduled"])
    }

    private static func hourOfDefault(_ hours: Int64) -> WallClockInstant {
        TestTimerService.defaultWallClock.advanced(by: .seconds(hours * 3600))
    }
}

// MARK: - Schedules and probes

/// Counts the questions a schedule is asked.
private struct CountingSchedule: WallClockSchedule {
    let inner: CalendarSchedule
    private let count = CountBox()

    init(_ inner: CalendarSchedule) { self.inner = inner }

    var calls: Int { self.count.value.load(ordering: .relaxed) }

    func next(after instant: WallClockInstant) -> WallClockInstant? {
        self.count.value.add(1, ordering: .relaxed)
        return self.inner.next(after: instant)
    }
}

private final class CountBox: Sendable {
    let value = Atomic<Int>(0)
}

/// Every `period` nanoseconds from the epoch.
private struct PeriodicSchedule: WallClockSchedule {
    let period: Int64

    func next(after instant: WallClockInstant) -> WallClockInstant? {
        let value = instant.nanosecondsSinceEpoch
        let floor = value >= 0 ? value / self.period : (value - self.period + 1) / self.period
        return WallClockInstant(nanosecondsSinceEpoch: (floor + 1) * self.period)
    }
}

/// Where a ``ProbingSchedule`` finds the service it asks about.
private final class ServiceProbe: Sendable {
    let service = SemaphoreGuarded<TestTimerService?>(nil)
    let answers = SemaphoreGuarded<[Bool]>([])
}

/// Every `period`, asking the service whether its own timer is scheduled each time it is asked.
private struct ProbingSchedule: WallClockSchedule {
    let period: Int64
    let probe: ServiceProbe

    func next(after instant: WallClockInstant) -> WallClockInstant? {
        if let service = self.probe.service.withLock({ $0 }) {
            let answer = service.isScheduled("probing")
            self.probe.answers.withLock { $0.append(answer) }
        }
        return PeriodicSchedule(period: self.period).next(after: instant)
    }
}

/// Answers `first` for any instant before it, then fails to advance as `fault` says.
struct BrokenSchedule: WallClockSchedule, CustomStringConvertible {
    enum Fault: CaseIterable, Sendable {
        case same, earlier, clockStart, tooClose
    }

    let first: WallClockInstant
    let fault: Fault

    var description: String { "broken(\(self.fault))" }

    func next(after instant: WallClockInstant) -> WallClockInstant? {
        if instant < self.first { return self.first }
        switch self.fault {
        case .same: return instant
        case .earlier: return instant.advanced(by: .seconds(-1))
        case .clockStart: return WallClockInstant(nanosecondsSinceEpoch: .min)
        case .tooClose: return instant.advanced(by: .nanoseconds(1))
        }
    }
}

/// Counts broken schedules and ended timers.
private final class BrokenScheduleCounter: TimerMetricsRecorder {
    let broke = Atomic<Int>(0)
    let ended = Atomic<Int>(0)

    func timerScheduled() {}
    func timerFired(latenessNanoseconds: Int64, missed: UInt64, ended: Bool) {}
    func timersCancelled(_ count: Int) {}
    func timersEnded(_ count: Int) { self.ended.add(count, ordering: .relaxed) }
    func timerScheduleBroke() { self.broke.add(1, ordering: .relaxed) }
}

/// Runs `body` on a thread of its own and waits for it (at least `timeout`, see ``Polling``), without blocking a
/// Swift-concurrency thread. Returns whether it finished (a deadlocked body leaks its thread).
func runOnThread(timeout: Duration, _ body: @escaping @Sendable () -> Void) async -> Bool {
    let done = DoneFlag()
    detachThread {
        body()
        done.value.store(true, ordering: .releasing)
    }
    return await Polling.until(timeout: timeout) { done.value.load(ordering: .acquiring) }
}

private final class DoneFlag: Sendable {
    let value = Atomic<Bool>(false)
}

/// What a change to a timer on the wall or continuous clock costs the engine's bookkeeping.
@Suite("Bound timers: the earliest deadline per clock")
struct BoundDeadlineCostTests {
    @Test("1 000 .continuous sessions touched 2 000 times: O(shards + log n) work per touch, counted on virtual time")
    func touchesCostLogarithmicWork() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let sessions = 1_000
        let options = TimerOptions(clock: .continuous)
        for index in 0..<sessions {
            try timers.schedule(id: TimerID("s\(index)"), after: .seconds(60 + Int64(index % 97)), options: options) {
                _ in
            }
        }
        let before = timers.core.boundDeadlineWork
        var generator = SplitMix(seed: 7)
        for touch in 0..<2_000 {
            let index = Int(generator.next() % UInt64(sessions))
            let delay = Duration.seconds(30) + .milliseconds(Int64(generator.next() % 60_000))
            #expect(try timers.reschedule(TimerID("s\(index)"), after: delay))
            // What an engine asks after each pass that changed a bound timer.
            let earliest = timers.core.earliestBoundDeadlines().continuous
            if touch % 500 == 0 {
                #expect(earliest == Self.scanEarliest(timers, sessions), "the heap agrees with a scan of every session")
            }
        }
        let work = timers.core.boundDeadlineWork - before
        // A scan of every session per touch did 2 000 × 1 000 = 2·10⁶. The heaps add an entry per
        // touch, look at each shard's top once per question (64 shards), drop what went stale and
        // rebuild a shard when stale entries outnumber live ones: independent of the count.
        #expect(work < 2_000 * (TimerCore.shardCount + 64), "work: \(work) entries for 2 000 touches")
    }

    /// The earliest continuous deadline, by asking every session (the reference).
    private static func scanEarliest(_ timers: TestTimerService, _ sessions: Int) -> Int64? {
        let offset = timers.core.doorbell.continuousNow() - timers.core.doorbell.now()
        return (0..<sessions).compactMap { timers.deadline(of: TimerID("s\($0)"))?.nanoseconds }.min().map {
            $0 + offset
        }
    }
}
