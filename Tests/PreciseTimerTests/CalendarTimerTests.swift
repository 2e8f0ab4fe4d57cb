import Dispatch
import PreciseTimer
import PreciseTimerCalendar
import PreciseTimerTesting
import Synchronization
import Testing

/// `CalendarSchedule` on the services: a nightly job through DST, clock steps and suspend on
/// virtual time (exact), and a fast calendar on the real services (never early, on its grid).
@Suite("Calendar timers")
struct CalendarTimerTests {
    private static let hour: Int64 = 3_600_000_000_000

    private static func instant(_ seconds: Int64) -> WallClockInstant {
        WallClockInstant(nanosecondsSinceEpoch: seconds * 1_000_000_000)
    }

    @Test("a nightly job at 02:30 Europe/Berlin: skipped when clocks spring forward, once when they fall back")
    func nightlyThroughDaylightSaving() throws {
        // 2026-03-27T12:00Z, two days before Berlin springs forward.
        let timers = TestTimerService(wallClock: Self.instant(1_774_612_800))
        defer { timers.shutdown() }
        let calls = Recorder<Tick>()
        try timers.scheduleRepeating(id: "nightly", on: try CalendarSchedule("*-*-* 02:30 Europe/Berlin")) {
            calls.append($0)
        }
        try timers.advance(by: .seconds(4 * 86_400))
        // The 28th (01:30Z), not the 29th (02:30 does not exist), the 30th and 31st at 00:30Z (CEST).
        #expect(
            calls.values.map(\.wallClockDeadline) == [
                Self.instant(1_774_661_400), Self.instant(1_774_830_600), Self.instant(1_774_917_000),
            ])
        #expect(calls.values.allSatisfy { $0.lateness == .zero && $0.missed == 0 })

        // 2026-10-24T12:00Z: 02:30 on the 25th happens twice and fires once, at the first.
        let autumn = TestTimerService(wallClock: Self.instant(1_792_843_200))
        defer { autumn.shutdown() }
        let autumnCalls = Recorder<Tick>()
        try autumn.scheduleRepeating(id: "nightly", on: try CalendarSchedule("*-*-* 02:30 Europe/Berlin")) {
            autumnCalls.append($0)
        }
        try autumn.advance(by: .seconds(2 * 86_400))
        #expect(
            autumnCalls.values.map(\.wallClockDeadline) == [
                Self.instant(1_792_888_200), Self.instant(1_792_978_200),
            ])
    }

    @Test("a step back over an occurrence that fired does not fire it again")
    func stepBack() throws {
        let timers = TestTimerService()  // 2026-01-01T00:00:00Z
        defer { timers.shutdown() }
        let calls = Recorder<Tick>()
        try timers.scheduleRepeating(on: try CalendarSchedule("*-*-* 03:00 UTC")) { calls.append($0) }
        try timers.advance(by: .seconds(3 * 3600))
        #expect(calls.values.count == 1)
        timers.setWallClock(to: TestTimerService.defaultWallClock)  // back to midnight
        try timers.advance(by: .seconds(6 * 3600))
        #expect(calls.values.count == 1, "03:00 of that day already fired")
        try timers.advance(by: .seconds(21 * 3600))  // to the next 03:00
        #expect(calls.values.count == 2)
    }

    @Test("six hours asleep: .skip makes one call for the latest hour, .burst one per hour")
    func suspend() throws {
        let timers = TestTimerService(wallClock: TestTimerService.defaultWallClock.advanced(by: .seconds(30 * 60)))
        defer { timers.shutdown() }
        let skipped = Recorder<Tick>()
        let burst = Recorder<Tick>()
        let hourly = try CalendarSchedule("hourly UTC")
        try timers.scheduleRepeating(id: "skip", on: hourly) { skipped.append($0) }
        try timers.scheduleRepeating(id: "burst", on: hourly, options: .init(missedTicks: .burst)) { burst.append($0) }
        timers.suspend(for: .seconds(6 * 3600))  // 00:30 to 06:30: 01:00 ... 06:00 passed asleep
        #expect(skipped.values.map(\.missed) == [5])
        #expect(
            skipped.values.first?.wallClockDeadline
                == TestTimerService.defaultWallClock.advanced(by: .seconds(6 * 3600)))
        #expect(
            burst.values.map(\.wallClockDeadline)
                == (1...6).map {
                    TestTimerService.defaultWallClock.advanced(by: .seconds($0 * 3600))
                })
        #expect(timers.isScheduled("skip") && timers.isScheduled("burst"))
    }

    @Test("a schedule with no occurrence left is refused with .invalidSchedule, registry unchanged")
    func noFutureOccurrence() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        // Built outside the expectation: a refused specification would be .invalidSchedule too.
        let past = try CalendarSchedule("2001-01-01")
        let error = #expect(throws: PreciseTimerError.self) {
            try timers.scheduleRepeating(id: "past", on: past) { _ in }
        }
        #expect(error?.code == .invalidSchedule)
        #expect(error?.value == "2001-01-01 00:00:00")
        #expect(error?.detail?.hasPrefix("no occurrence after ") == true)
        #expect(timers.scheduledCount == 0)
    }

    @Test(
        "every tenth of a second on the real services: never early, on the grid, each occurrence once",
        arguments: Implementation.allCases)
    func realServices(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let fired = Recorder<(Tick, Int64)>()
        try timers.scheduleRepeating(id: "tenth", on: try CalendarSchedule("*:*:0/0.1 UTC")) { tick in
            fired.append((tick, wallClockNanoseconds()))
        }
        let values = await fired.wait(forCount: 3)
        for (tick, wallAtCall) in values {
            let occurrence = try #require(tick.wallClockDeadline).nanosecondsSinceEpoch
            #expect(occurrence % 100_000_000 == 0)
            #expect(wallAtCall >= occurrence, "never before the wall clock reached it")
        }
        let occurrences = values.compactMap { $0.0.wallClockDeadline?.nanosecondsSinceEpoch }
        #expect(zip(occurrences, occurrences.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test("cancelling a wall-clock timer releases its schedule outside the service's lock")
    func scheduleReleasedOutsideLock() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let verdict = LockVerdict()
        try timers.scheduleRepeating(id: "probe", on: LockProbe(timers: timers, id: "probe", verdict: verdict)) { _ in }
        #expect(timers.cancel("probe"))
        #expect(verdict.lockWasFree.withLock { $0 } == true)
    }
}

/// What ``LockProbe``'s deinit found.
private final class LockVerdict: Sendable {
    let lockWasFree = Mutex<Bool?>(nil)
}

/// An hourly schedule whose deinit (user code) asks, from another thread, about its own timer:
/// that takes the lock of the timer's shard, so it answers at once only if the service released
/// the schedule outside that lock. Bounded: a lock still held after 5 s counts as held.
private final class LockProbe: WallClockSchedule {
    let timers: TestTimerService
    let id: TimerID
    let verdict: LockVerdict

    init(timers: TestTimerService, id: TimerID, verdict: LockVerdict) {
        self.timers = timers
        self.id = id
        self.verdict = verdict
    }

    func next(after instant: WallClockInstant) -> WallClockInstant? {
        WallClockInstant(nanosecondsSinceEpoch: instant.nanosecondsSinceEpoch + 3_600_000_000_000)
    }

    deinit {
        let answered = DispatchSemaphore(value: 0)
        let (timers, id) = (self.timers, self.id)
        DispatchQueue.global().async {
            _ = timers.isScheduled(id)
            answered.signal()
        }
        let free = answered.wait(timeout: .now() + 5) == .success
        self.verdict.lockWasFree.withLock { $0 = free }
    }
}
