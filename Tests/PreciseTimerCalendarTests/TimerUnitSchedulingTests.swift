import Foundation
import Glibc
import PreciseTimerCalendar
import PreciseTimerCore
import PreciseTimerTesting
import Testing

/// A fresh directory under /tmp, removed when the test ends.
private struct ScratchDirectory: ~Copyable {
    let path: String

    init() throws {
        var template = Array("/tmp/precise-units-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard let made else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        self.path = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: self.path) }
}

/// What a unit's handler saw at each call: the tick, and the clocks when it began and ended.
private final class Runs: Sendable {
    struct Run: Sendable {
        var tick: Tick
        var wall: WallClockInstant
        var start: MonotonicInstant
        var end: MonotonicInstant?
    }
    private let runs = SemaphoreGuarded<[Run]>([])

    var all: [Run] { self.runs.withLock { $0 } }
    var count: Int { self.runs.withLock { $0.count } }

    /// A handler that records each call and, for `busy`, sleeps that long on `timers`' clock.
    func handler(
        _ timers: TestTimerService, busy: Duration = .zero
    ) -> @Sendable (Tick) async -> Void {
        { [weak timers] tick in
            guard let timers else { return }
            let index = self.runs.withLock { runs in
                runs.append(Run(tick: tick, wall: timers.wallClockNow, start: timers.now))
                return runs.count - 1
            }
            if busy > .zero { try? await timers.clock.sleep(for: busy) }
            let end = timers.now
            self.runs.withLock { $0[index].end = end }
        }
    }

    /// Schedules the unit `text` under `id` with a handler that records into these runs (see
    /// ``handler(_:busy:)``) and holds a canary; returns the handle and a probe on the canary,
    /// which is released once the unit's handler is.
    func schedule(
        _ text: String, id: TimerID, on timers: TestTimerService, store: (any TimerStateStore)? = nil,
        busy: Duration = .zero
    ) throws -> (handle: TimerHandle, probe: WeakProbe<Canary>) {
        let canary = Canary()
        let record = self.handler(timers, busy: busy)
        let handle = try timers.schedule(unit: try TimerUnit(text), id: id, store: store) { tick in
            withExtendedLifetime(canary) {}
            await record(tick)
        }
        return (handle, WeakProbe(canary))
    }
}

/// Polls in real time until `condition` holds (``Polling/until(timeout:_:)``).
private func eventually(_ condition: () -> Bool) async -> Bool {
    await Polling.until(condition)
}

/// Waits until the unit has nothing under way, or its handler (or a store retry) waits on a
/// virtual sleep (the service then holds more than `count` timers).
private func settle(_ timers: TestTimerService, _ id: TimerID, timers count: Int = 1) async {
    let settled = await eventually { timers.isUnitIdle(id) || timers.scheduledCount > count }
    #expect(settled, "unit \(id) never settled")
}

/// Advances `steps` times by `step`, letting the unit settle after each.
private func drive(
    _ timers: TestTimerService, _ id: TimerID, steps: Int, by step: Duration, timers count: Int = 1
) async throws {
    for _ in 0..<steps {
        try timers.advance(by: step)
        await settle(timers, id, timers: count)
    }
}

/// Moves time from deadline to deadline (each timer fires at its exact instant, and the unit's
/// task sees that instant) for `span`, letting the unit settle after each.
private func driveExactly(
    _ timers: TestTimerService, _ ids: TimerID..., for span: Duration
) async throws {
    let end = timers.now.advanced(by: span)
    func settleAll() async {
        for id in ids { await settle(timers, id, timers: ids.count) }
    }
    while let next = timers.nextDeadline, next <= end {
        timers.advanceToNextDeadline()
        await settleAll()
    }
    try timers.advance(to: end)
    await settleAll()
}

/// `count` elapses, or a quarter of them under a sanitizer (the whole suite runs beside these,
/// and several of its tests have time bounds).
private func elapses(_ count: Int) -> Int {
    Sanitizers.anyIsActive ? count / 4 : count
}

private func wall(_ text: String) -> WallClockInstant {
    // "2026-01-03T12:00:00Z" → nanoseconds since the epoch.
    let date = ISO8601DateFormatter().date(from: text)!
    return WallClockInstant(nanosecondsSinceEpoch: Int64(date.timeIntervalSince1970) * 1_000_000_000)
}

/// A store whose claims throw while `failing` is set; records every attempt.
private final class FlakyStore: TimerStateStore {
    struct Failure: Error {}
    let failing = SemaphoreGuarded(false)
    private let calls = SemaphoreGuarded<[WallClockInstant]>([])
    private let granted = SemaphoreGuarded<[WallClockInstant]>([])
    /// Occurrences refused (answered `false`) rather than claimed.
    let refuse: @Sendable (WallClockInstant) -> Bool

    init(refuse: @escaping @Sendable (WallClockInstant) -> Bool = { _ in false }) {
        self.refuse = refuse
    }

    var attempts: [WallClockInstant] { self.calls.withLock { $0 } }
    var claimed: [WallClockInstant] { self.granted.withLock { $0 } }

    func lastTrigger(of id: TimerID) async throws -> WallClockInstant? { nil }

    func claim(_ occurrence: WallClockInstant, of id: TimerID) async throws -> Bool {
        self.calls.withLock { $0.append(occurrence) }
        if self.failing.withLock({ $0 }) { throw Failure() }
        if self.refuse(occurrence) { return false }
        self.granted.withLock { $0.append(occurrence) }
        return true
    }
}

/// A store that says it is shared by a fleet, and claims everything.
private struct FleetStore: TimerStateStore {
    var isSharedAcrossMachines: Bool { true }
    func lastTrigger(of id: TimerID) async throws -> WallClockInstant? { nil }
    func claim(_ occurrence: WallClockInstant, of id: TimerID) async throws -> Bool { true }
}

/// A store whose claims wait until the test opens the gate, then grant everything.
private final class GatedStore: TimerStateStore {
    private let waiting = SemaphoreGuarded<[CheckedContinuation<Void, Never>]>([])
    private let open = SemaphoreGuarded(false)

    var pending: Int { self.waiting.withLock { $0.count } }

    func openGate() {
        let resumed = self.open.withLock { open in
            open = true
            return self.waiting.withLock { waiting in
                defer { waiting = [] }
                return waiting
            }
        }
        for continuation in resumed { continuation.resume() }
    }

    func lastTrigger(of id: TimerID) async throws -> WallClockInstant? { nil }

    func claim(_ occurrence: WallClockInstant, of id: TimerID) async throws -> Bool {
        await withCheckedContinuation { continuation in
            let now = self.open.withLock { open in
                if !open { self.waiting.withLock { $0.append(continuation) } }
                return open
            }
            if now { continuation.resume() }
        }
        return true
    }
}

private let machineA: [UInt8] = Array(0..<16)
private let machineB: [UInt8] = Array(100..<116)

@Suite("schedule(unit:): systemd timer units on virtual time")
struct TimerUnitSchedulingTests {
    @Test("a unit without any trigger, Persistent= without a store, a negative span, a taken ID: typed errors")
    func refusals() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        var unit = try TimerUnit("OnCalendar=daily")
        unit.onCalendar = []
        #expect {
            try timers.schedule(unit: unit, id: "none") { _ in }
        } throws: { ($0 as? PreciseTimerError)?.code == .invalidSchedule }

        let persistent = try TimerUnit("OnCalendar=daily\nPersistent=true")
        #expect {
            try timers.schedule(unit: persistent, id: "persistent") { _ in }
        } throws: { ($0 as? PreciseTimerError)?.code == .invalidConfiguration }

        var negative = try TimerUnit("OnActiveSec=1s")
        negative.onActive = [.seconds(-1)]
        #expect {
            try timers.schedule(unit: negative, id: "negative") { _ in }
        } throws: { ($0 as? PreciseTimerError)?.code == .invalidDelay }

        let good = try TimerUnit("OnCalendar=daily")
        try timers.schedule(unit: good, id: "taken") { _ in }
        #expect {
            try timers.schedule(unit: good, id: "taken") { _ in }
        } throws: { ($0 as? PreciseTimerError)?.code == .duplicateID }
        #expect(timers.scheduledIDs == ["taken"])
    }

    @Test("Persistent=: after downtime one catch-up runs, once between two processes sharing the store")
    func persistentCatchUpRunsOnce() async throws {
        let root = try ScratchDirectory()
        let unit = try TimerUnit("OnCalendar=*-*-* 03:00:00\nPersistent=true\nAccuracySec=1s")
        let runs = Runs()

        // First life: runs day 1's 03:00 on time.
        do {
            let store = try DirectoryTimerStateStore(directory: root.path)
            let timers = TestTimerService()
            try timers.schedule(unit: unit, id: "backup", store: store, runs.handler(timers))
            await settle(timers, "backup")
            #expect(runs.count == 0, "no stamp yet: no catch-up at the first start")
            try await drive(timers, "backup", steps: 4, by: .seconds(3600))
            #expect(runs.all.map(\.tick.wallClockDeadline) == [wall("2026-01-01T03:00:00Z")])
            timers.shutdown()
        }

        // Down for two and a half days; two processes start on the same store.
        let store1 = try DirectoryTimerStateStore(directory: root.path)
        let store2 = try DirectoryTimerStateStore(directory: root.path)
        let restart = wall("2026-01-03T12:00:00Z")
        let first = TestTimerService(wallClock: restart)
        let second = TestTimerService(wallClock: restart)
        defer {
            first.shutdown()
            second.shutdown()
        }
        try first.schedule(unit: unit, id: "backup", store: store1, runs.handler(first))
        try second.schedule(unit: unit, id: "backup", store: store2, runs.handler(second))
        await settle(first, "backup")
        // The catch-up is due at once: NEXT is now, LAST the stamp's occurrence.
        #expect(first.listTimers().first?.next == restart)
        #expect(first.listTimers().first?.last == wall("2026-01-01T03:00:00Z"))
        for _ in 0..<3 {
            await settle(first, "backup")
            await settle(second, "backup")
            try first.advance(by: .seconds(2))
            try second.advance(by: .seconds(2))
        }
        await settle(first, "backup")
        await settle(second, "backup")
        // One catch-up, of the latest missed occurrence (day 3, not day 2).
        #expect(runs.all.map(\.tick.wallClockDeadline).dropFirst() == [wall("2026-01-03T03:00:00Z")])
        #expect(try await store1.lastTrigger(of: "backup") == wall("2026-01-03T03:00:00Z"))

        // The next day's occurrence: once between the two.
        try await drive(first, "backup", steps: 24, by: .seconds(3600))
        try await drive(second, "backup", steps: 24, by: .seconds(3600))
        #expect(
            runs.all.map(\.tick.wallClockDeadline).dropFirst()
                == [wall("2026-01-03T03:00:00Z"), wall("2026-01-04T03:00:00Z")])
        #expect(runs.count == 3)

        // A third start, nothing missed since: no catch-up.
        let third = TestTimerService(wallClock: wall("2026-01-04T13:00:00Z"))
        defer { third.shutdown() }
        try third.schedule(unit: unit, id: "backup", store: store1, runs.handler(third))
        await settle(third, "backup")
        try third.advance(by: .seconds(2))
        await settle(third, "backup")
        #expect(runs.count == 3)
    }

    @Test("RandomizedDelaySec=: every calendar elapse runs within [occurrence, occurrence + delay]")
    func randomizedDelayWithinBounds() async throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let runs = Runs()
        let unit = try TimerUnit("OnCalendar=*:*:00\nRandomizedDelaySec=30s\nAccuracySec=1us")
        try timers.schedule(unit: unit, id: "jitter", runs.handler(timers))
        while runs.count < elapses(200) {
            #expect(timers.advanceToNextDeadline())
            await settle(timers, "jitter")
        }
        var delays: [Duration] = []
        for run in runs.all {
            let occurrence = try #require(run.tick.wallClockDeadline)
            let delay = occurrence.duration(to: run.wall)
            #expect(delay >= .zero, "ran before its elapse: \(run.tick)")
            #expect(delay <= .seconds(30) + .microseconds(1), "ran after elapse + delay: \(run.tick)")
            #expect(run.tick.missed == 0)
            delays.append(delay)
        }
        // Consecutive minutes, none skipped, and delays spread over the range.
        let occurrences = runs.all.compactMap(\.tick.wallClockDeadline)
        #expect(zip(occurrences, occurrences.dropFirst()).allSatisfy { $0.duration(to: $1) == .seconds(60) })
        #expect(delays.max()! - delays.min()! > .seconds(20))
    }

    @Test("RandomizedDelaySec= on OnUnitActiveSec=: each start is 10 to 15 s after the one before")
    func randomizedDelayMonotonic() async throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let runs = Runs()
        let unit = try TimerUnit("OnActiveSec=0\nOnUnitActiveSec=10s\nRandomizedDelaySec=5s\nAccuracySec=1us")
        try timers.schedule(unit: unit, id: "mono", runs.handler(timers))
        while runs.count < elapses(100) {
            #expect(timers.advanceToNextDeadline())
            await settle(timers, "mono")
        }
        let starts = runs.all.map(\.start)
        let gaps = zip(starts, starts.dropFirst()).map { $1 - $0 }
        #expect(gaps.allSatisfy { $0 >= .seconds(10) && $0 <= .seconds(15) + .microseconds(1) })
        #expect(gaps.max()! - gaps.min()! > .seconds(2))
    }

    @Test("FixedRandomDelay=: the delay is stable for (machine, unit), across restarts; per unit for a fleet store")
    func fixedRandomDelayStable() async throws {
        let unit = try TimerUnit("OnCalendar=hourly\nRandomizedDelaySec=1h\nFixedRandomDelay=true\nAccuracySec=1us")
        // The delay one service applies: measured from two runs.
        let timers = TestTimerService()
        let runs = Runs()
        try timers.schedule(unit: unit, id: "report", store: nil, machineID: machineA, runs.handler(timers))
        while runs.count < 2 {
            #expect(timers.advanceToNextDeadline())
            await settle(timers, "report")
        }
        let measured = runs.all.map { $0.tick.wallClockDeadline!.duration(to: $0.wall) }
        #expect(measured[0] == measured[1])
        #expect(measured[0] > .zero && measured[0] < .seconds(3600))
        timers.shutdown()

        /// The delay a fresh service plans: NEXT minus the next full hour.
        func planned(
            _ id: TimerID, machine: [UInt8], store: (any TimerStateStore)? = nil
        ) async throws -> Duration {
            let timers = TestTimerService()
            defer { timers.shutdown() }
            try timers.schedule(unit: unit, id: id, store: store, machineID: machine) { _ in }
            await settle(timers, id)
            let next = try #require(timers.listTimers().first?.next)
            return wall("2026-01-01T01:00:00Z").duration(to: next)
        }
        // The measured one is the planned one (whole microseconds, as systemd's), up to the
        // tolerance grid of AccuracySec=1us.
        let again = try await planned("report", machine: machineA)
        #expect(again <= measured[0] && measured[0] < again + .microseconds(1))
        #expect(again.components.attoseconds % 1_000_000_000_000 == 0)
        #expect(try await planned("report", machine: machineA) == again)
        #expect(try await planned("other", machine: machineA) != measured[0])
        #expect(try await planned("report", machine: machineB) != measured[0])
        // A fleet's store: the same delay on every machine, still per unit.
        let root = try ScratchDirectory()
        #expect(try DirectoryTimerStateStore(directory: root.path).isSharedAcrossMachines == false)
        let fleetA = try await planned("report", machine: machineA, store: FleetStore())
        let fleetB = try await planned("report", machine: machineB, store: FleetStore())
        #expect(fleetA == fleetB)
        #expect(try await planned("other", machine: machineB, store: FleetStore()) != fleetA)
    }

    @Test("SipHash-2-4 gives the reference vector; machine IDs parse as systemd writes them")
    func sipHashVector() {
        let hash = SipHash24(key: Array(0..<16)).hash(Array(0..<15))
        #expect(hash == 0xa129_ca61_49be_45e5)
        #expect(FixedRandomDelay.parse("000102030405060708090a0b0c0d0e0f\n") == Array(0..<16))
        #expect(FixedRandomDelay.parse("not-an-id") == nil)
    }

    @Test("OnUnitInactiveSec= counts from the end of the async handler")
    func unitInactiveFromEnd() async throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let runs = Runs()
        let unit = try TimerUnit("OnActiveSec=0\nOnUnitInactiveSec=10s\nAccuracySec=1us")
        try timers.schedule(unit: unit, id: "after", runs.handler(timers, busy: .seconds(3)))
        try await driveExactly(timers, "after", for: .seconds(30))
        let all = runs.all
        #expect(all.count == 3)  // at 0, 13, 26
        let starts = all.map(\.start)
        #expect(zip(starts, starts.dropFirst()).allSatisfy { $1 - $0 == .seconds(13) })
        for run in all where run.end != nil {
            #expect(run.end! - run.start == .seconds(3))
        }
    }

    @Test(
        "a 3 s handler on a 2 s period (OnUnitActiveSec=, OnCalendar=) never runs back to back and counts the missed elapse",
        arguments: ["OnActiveSec=0\nOnUnitActiveSec=2s", "OnCalendar=*:*:0/2"])
    func slowHandlerDropsElapses(triggers: String) async throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let runs = Runs()
        let unit = try TimerUnit("\(triggers)\nAccuracySec=1us")
        try timers.schedule(unit: unit, id: "slow", runs.handler(timers, busy: .seconds(3)))
        try await driveExactly(timers, "slow", for: .seconds(20))
        let all = runs.all.filter { $0.end != nil }
        #expect(all.count >= 4)
        for (before, after) in zip(all, all.dropFirst()) {
            #expect(after.start - before.end! >= .seconds(1), "ran back to back: \(after.tick)")
            #expect(after.start - before.start == .seconds(4))
            #expect(after.tick.missed == 1, "the elapse during the run is counted: \(after.tick)")
        }
        #expect(all.first?.tick.missed == 0)
    }

    @Test("a store that throws: the claim is retried within AccuracySec=, then counted missed, never run")
    func storeErrorsRetriedThenMissed() async throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let runs = Runs()
        let store = FlakyStore()
        store.failing.withLock { $0 = true }
        let unit = try TimerUnit("OnCalendar=*:*:00\nAccuracySec=10s")
        try timers.schedule(unit: unit, id: "flaky", store: store, runs.handler(timers))
        await settle(timers, "flaky")
        // 00:01:00: the store fails for 30 s of retries and more.
        try await drive(timers, "flaky", steps: 900, by: .milliseconds(100))
        let first = wall("2026-01-01T00:01:00Z")
        #expect(store.attempts.count > 3)
        #expect(store.attempts.allSatisfy { $0 == first })
        #expect(runs.count == 0)
        // The store recovers: 00:02:00 runs, and says one was missed.
        store.failing.withLock { $0 = false }
        try await drive(timers, "flaky", steps: 40, by: .seconds(1))
        #expect(runs.all.map(\.tick.wallClockDeadline) == [wall("2026-01-01T00:02:00Z")])
        #expect(runs.all.first?.tick.missed == 1)
        #expect(store.claimed == [wall("2026-01-01T00:02:00Z")])
    }

    @Test("a store that answers false: the occurrence is skipped silently (not counted missed)")
    func refusedClaimsSkipped() async throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let runs = Runs()
        let oddMinutes = wall("2026-01-01T00:01:00Z").nanosecondsSinceEpoch
        let store = FlakyStore { ($0.nanosecondsSinceEpoch - oddMinutes) / 60_000_000_000 % 2 == 0 }
        let unit = try TimerUnit("OnCalendar=*:*:00\nAccuracySec=1us")
        try timers.schedule(unit: unit, id: "shared", store: store, runs.handler(timers))
        await settle(timers, "shared")
        try await drive(timers, "shared", steps: 10, by: .seconds(60))
        #expect(
            runs.all.map(\.tick.wallClockDeadline)
                == [
                    wall("2026-01-01T00:02:00Z"), wall("2026-01-01T00:04:00Z"), wall("2026-01-01T00:06:00Z"),
                    wall("2026-01-01T00:08:00Z"), wall("2026-01-01T00:10:00Z"),
                ])
        #expect(runs.all.allSatisfy { $0.tick.missed == 0 })
        #expect(store.attempts.count == 10)
    }

    @Test("the handle names the unit across runs; cancelling it stops the unit and releases the handler")
    func cancelStopsAndReleases() async throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let runs = Runs()
        let (handle, probe) = try runs.schedule(
            "OnActiveSec=1s\nOnUnitActiveSec=5s\nAccuracySec=1us", id: "job", on: timers)
        try await drive(timers, "job", steps: 12, by: .seconds(1))
        #expect(runs.count == 3)  // at 1, 6, 11 s
        #expect(runs.all.allSatisfy { $0.tick.handle == handle })
        #expect(timers.isScheduled("job"))
        #expect(!probe.isReleased)

        #expect(timers.cancel(handle))
        #expect(!timers.isScheduled("job"))
        try await drive(timers, "job", steps: 20, by: .seconds(1), timers: 0)
        #expect(runs.count == 3)
        #expect(await eventually { probe.isReleased }, "the handler outlived its unit")
    }

    @Test("cancel by ID while the handler runs: the run finishes, no other begins, the handler is released")
    func cancelDuringRun() async throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let runs = Runs()
        let probe = try runs.schedule(
            "OnActiveSec=1s\nOnUnitActiveSec=2s\nAccuracySec=1us", id: "busy", on: timers, busy: .seconds(3)
        ).probe
        try await drive(timers, "busy", steps: 2, by: .seconds(1))
        #expect(runs.count == 1)
        #expect(timers.cancel("busy"))
        try await drive(timers, "busy", steps: 30, by: .seconds(1), timers: 0)
        #expect(runs.count == 1)
        #expect(runs.all.first?.end != nil, "the running handler finished")
        #expect(await eventually { probe.isReleased }, "the handler outlived its unit")
        #expect(timers.scheduledCount == 0)
    }

    @Test("cancel while the store decides: the occurrence it grants is not run, and the handler is released")
    func cancelDuringClaim() async throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let runs = Runs()
        let store = GatedStore()
        let probe = try runs.schedule("OnActiveSec=1s\nAccuracySec=1us", id: "gated", on: timers, store: store).probe
        await settle(timers, "gated")
        try timers.advance(by: .seconds(1))
        #expect(await eventually { store.pending == 1 })
        #expect(timers.cancel("gated"))
        store.openGate()
        #expect(await eventually { probe.isReleased }, "the unit's task never ended")
        #expect(runs.count == 0)
    }

    @Test("OnStartupSec= counts from the service's creation, OnActiveSec= from the schedule call")
    func startupAndActive() async throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        try timers.advance(by: .seconds(100))
        let startup = Runs()
        let active = Runs()
        try timers.schedule(
            unit: try TimerUnit("OnStartupSec=150s\nAccuracySec=1us"), id: "startup", startup.handler(timers))
        try timers.schedule(
            unit: try TimerUnit("OnActiveSec=150s\nAccuracySec=1us"), id: "active", active.handler(timers))
        try await driveExactly(timers, "startup", "active", for: .seconds(300))
        #expect(startup.all.map(\.start) == [MonotonicInstant(nanoseconds: 1_150_000_000_000)])
        #expect(active.all.map(\.start) == [MonotonicInstant(nanoseconds: 1_250_000_000_000)])
    }

    @Test("OnCalendar= through a suspend: the elapse slept through runs at resume, once")
    func calendarThroughSuspend() async throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let runs = Runs()
        let unit = try TimerUnit("OnCalendar=*-*-* 03:00:00\nAccuracySec=1us")
        try timers.schedule(unit: unit, id: "nightly", runs.handler(timers))
        timers.suspend(for: .seconds(5 * 3600))
        await settle(timers, "nightly")
        #expect(runs.all.map(\.tick.wallClockDeadline) == [wall("2026-01-01T03:00:00Z")])
        #expect(runs.all.first?.wall == wall("2026-01-01T05:00:00Z"))
        try await drive(timers, "nightly", steps: 24, by: .seconds(3600))
        #expect(
            runs.all.map(\.tick.wallClockDeadline) == [wall("2026-01-01T03:00:00Z"), wall("2026-01-02T03:00:00Z")])
        #expect(runs.all.allSatisfy { $0.tick.missed == 0 })
    }

    @Test(
        "OnCalendar= and wall-clock steps: forward, the elapse runs within a minute; back, it waits for the wall clock")
    func calendarThroughSteps() async throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let runs = Runs()
        let unit = try TimerUnit("OnCalendar=*-*-* 03:00:00\nAccuracySec=1us")
        try timers.schedule(unit: unit, id: "nightly", runs.handler(timers))
        // Forward over 03:00: noticed at the next check, at most a minute later.
        timers.setWallClock(to: wall("2026-01-01T02:59:30Z"))
        try await drive(timers, "nightly", steps: 60, by: .seconds(1))
        let first = try #require(runs.all.first)
        #expect(first.tick.wallClockDeadline == wall("2026-01-01T03:00:00Z"))
        #expect(first.wall >= wall("2026-01-01T03:00:00Z") && first.wall <= wall("2026-01-01T03:00:30Z"))
        #expect(runs.count == 1)

        // Back by an hour just before the next 03:00: nothing runs until the wall clock gets there.
        timers.setWallClock(to: wall("2026-01-02T02:59:00Z"))
        try timers.advance(by: .seconds(30))
        await settle(timers, "nightly")
        timers.setWallClock(to: wall("2026-01-02T01:59:30Z"))
        try await drive(timers, "nightly", steps: 60, by: .seconds(60))
        #expect(runs.count == 1)
        try await drive(timers, "nightly", steps: 2, by: .seconds(60))
        #expect(runs.count == 2)
        let second = try #require(runs.all.last)
        #expect(second.tick.wallClockDeadline == wall("2026-01-02T03:00:00Z"))
        #expect(second.wall >= wall("2026-01-02T03:00:00Z"))
    }

    @Test("WakeSystem=: an alarm armed at each next elapse, disarmed while the handler runs, gone with the unit")
    func wakeSystemAlarm() async throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let runs = Runs()
        let probe = try runs.schedule(
            "OnCalendar=*-*-* 03:00:00\nWakeSystem=true\nAccuracySec=1us", id: "wake", on: timers, busy: .seconds(60)
        ).probe
        let start = timers.now
        // The carrier checks the wall clock every minute; the alarm waits for the elapse itself.
        #expect(timers.wakeAlarm(of: "wake") == start.advanced(by: .seconds(3 * 3600)))
        #expect(timers.deadline(of: "wake") == start.advanced(by: .seconds(60)))
        try await driveExactly(timers, "wake", for: .seconds(3 * 3600 + 30))
        #expect(runs.count == 1)
        #expect(timers.wakeAlarm(of: "wake") == nil, "no elapse to wake for while the handler runs")
        try await driveExactly(timers, "wake", for: .seconds(60))
        #expect(timers.wakeAlarm(of: "wake") == start.advanced(by: .seconds(27 * 3600)))
        #expect(timers.cancel("wake"))
        #expect(await eventually { probe.isReleased })
        #expect(timers.wakeAlarm(of: "wake") == nil, "the alarm ends with the unit")
    }

    @Test("OnBootSec=: passed before the schedule call, it elapses at once; later, at boot + span; then elapsed")
    func onBoot() async throws {
        // The test service's monotonic clock starts 1000 s after its zero, the boot.
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let passed = Runs()
        let later = Runs()
        try timers.schedule(unit: try TimerUnit("OnBootSec=10s\nAccuracySec=1us"), id: "passed", passed.handler(timers))
        try timers.schedule(
            unit: try TimerUnit("OnBootSec=1200s\nAccuracySec=1us"), id: "later", later.handler(timers))
        try timers.advance(by: .zero)
        await settle(timers, "passed", timers: 2)
        #expect(passed.count == 1)
        #expect(passed.all.first?.start == MonotonicInstant(nanoseconds: 1_000_000_000_000))
        try await drive(timers, "later", steps: 30, by: .seconds(10), timers: 2)
        #expect(later.all.map(\.start) == [MonotonicInstant(nanoseconds: 1_200_000_000_000)])
        #expect(passed.count == 1)
        // Elapsed units stay scheduled, with no next elapse and their last run.
        #expect(timers.isScheduled("later") && timers.isScheduled("passed"))
        let listing = timers.listTimers()
        #expect(listing.map(\.next) == [nil, nil])
        #expect(listing.allSatisfy { $0.last != nil })
    }

    @Test("OnBootSec= passed at a restart: spent when the store knows a last trigger, run at once when it does not")
    func onBootAfterRestart() async throws {
        let root = try ScratchDirectory()
        let store = try DirectoryTimerStateStore(directory: root.path)
        #expect(try await store.claim(wall("2025-12-31T23:00:00Z"), of: "warm"))
        let unit = try TimerUnit("OnBootSec=10s\nOnCalendar=*-*-* 06:00:00\nAccuracySec=1us")
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let warm = Runs()
        let cold = Runs()
        try timers.schedule(unit: unit, id: "warm", store: store, warm.handler(timers))
        try timers.schedule(unit: unit, id: "cold", store: store, cold.handler(timers))
        await settle(timers, "warm", timers: 2)
        await settle(timers, "cold", timers: 2)
        try await driveExactly(timers, "warm", "cold", for: .seconds(60))
        #expect(warm.count == 0, "the unit triggered before this start: OnBootSec= is spent")
        #expect(cold.count == 1, "never triggered: OnBootSec= that passed elapses at once")
        #expect(timers.listTimers().map(\.next) == [wall("2026-01-01T06:00:00Z"), wall("2026-01-01T06:00:00Z")])
    }

    @Test("the unit table forgets cancelled units: 1 000 scheduled and cancelled leave fewer than 130 entries")
    func unitTableSweeps() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let unit = try TimerUnit("OnCalendar=daily")
        for index in 0..<1_000 {
            let handle = try timers.schedule(unit: unit, id: TimerID("unit-\(index)")) { _ in }
            timers.cancel(handle)
        }
        #expect(timers.units.entryCount < 130)
        #expect(timers.scheduledCount == 0)
    }

    @Test("listTimers: units and plain timers, sorted by NEXT, with LAST for units, printed as list-timers")
    func listing() async throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let unit = try TimerUnit("OnCalendar=*-*-* 06:00:00\nAccuracySec=1us")
        try timers.schedule(unit: unit, id: "unit", Runs().handler(timers))
        try timers.schedule(id: "plain", after: .seconds(30)) { _ in }
        try timers.scheduleRepeating(id: "calendar", on: try CalendarSchedule("*-*-* 03:00:00")) { _ in }
        let paused = try timers.schedule(id: "paused", after: .seconds(5)) { _ in }
        timers.pause(paused)
        await settle(timers, "unit", timers: 4)
        var rows = timers.listTimers()
        #expect(rows.map(\.id) == ["plain", "calendar", "unit", "paused"])
        #expect(
            rows.map(\.next) == [
                wall("2026-01-01T00:00:30Z"), wall("2026-01-01T03:00:00Z"), wall("2026-01-01T06:00:00Z"), nil,
            ])
        #expect(rows[0].left == .seconds(30))
        #expect(rows.allSatisfy { $0.last == nil && $0.passed == nil })

        try timers.advance(by: .seconds(25200))
        await settle(timers, "unit", timers: 3)
        rows = timers.listTimers()
        let listed = try #require(rows.first { $0.id == "unit" })
        #expect(listed.last == wall("2026-01-01T06:00:00Z"))
        #expect(listed.passed == .seconds(3600))
        #expect(listed.next == wall("2026-01-02T06:00:00Z"))
        #expect(listed.left == .seconds(82800))

        let table = TimerListing.table(rows)
        let lines = table.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first?.hasPrefix("NEXT") == true)
        #expect(lines.first?.hasSuffix("UNIT") == true)
        #expect(table.contains("Fri 2026-01-02 06:00:00 UTC 23h left"))
        #expect(table.contains("Thu 2026-01-01 06:00:00 UTC 1h ago"))
        #expect(lines.last == "3 timers listed.")
    }
}
