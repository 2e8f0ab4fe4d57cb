import PreciseTimerCore

/// One unit scheduled with `schedule(unit:id:store:_:)`: its triggers, its history in this process,
/// and the one timer that carries it.
///
/// **The carrier.** A unit is one repeating timer on the service, scheduled once under the unit's
/// ID on the continuous clock (so a suspend does not hold an elapse back), whose next deadline the
/// unit moves itself with `reschedule(_:at:)`. The timer keeps its ID and generation from the
/// first elapse to the cancel, so the handle `schedule(unit:…)` returns names the unit for its
/// whole life, and `cancel(handle)` or `cancel(id)` ends it. (Re-arming a one-shot after each run
/// would give each run a new generation, and the first handle would stop naming the unit.) The
/// timer's own period is a year: it never elapses by itself, because each call moves the deadline.
///
/// **A run.** When the carrier fires and an elapse is due on its own clock (the wall clock for
/// `OnCalendar=`, the monotonic clock for the others), the carrier is moved a year out and a task
/// claims the occurrence from the store (if any) and runs the handler. When the handler returns,
/// the next elapse is planned from the clocks then: elapses that passed while the unit was busy
/// are dropped and counted (``Tick/missed`` of the next call), never run back to back.
///
/// **Ground rules.** `state` is the only mutable state, behind its lock. The handler and the
/// store are called outside it; the service's quick calls that move the carrier (`reschedule`,
/// `pause`, the generation check) and the wake alarm are called under it, so that the phase and
/// the carrier's deadline change together. That nests one way only: no service of this package
/// calls a handler from inside those calls (a conformer of your own that did would deadlock
/// here). The carrier's handler (on the service's thread) only takes an elapse and moves the
/// deadline; everything that may wait runs in the task.
///
/// **Identity, by handle.** On this package's services the carrier is moved and paused by its
/// handle (``TimerUnitHost``), checked by generation under the registry's lock: a cancel followed
/// by a new timer under the same ID is never moved or paused. On a conformer of your own, which
/// only has the ID-keyed calls, each move first checks that the ID is still scheduled.
final class TimerUnitRun: TimerUnitRecord, Sendable {
    /// One elapse of the unit: the occurrence it claims and when it is due.
    struct Elapse: Sendable {
        /// The occurrence on the wall clock: the calendar's instant, or a monotonic elapse mapped
        /// to the wall clock when it was planned. What the store is asked to claim.
        var occurrence: WallClockInstant
        /// The monotonic elapse of a monotonic trigger or of the persistent catch-up; `nil` for a
        /// calendar occurrence, which is due on the wall clock.
        var monotonic: Int64?
        /// Whether ``occurrence`` is a calendar occurrence (a tick's `wallClockDeadline`).
        var isCalendar: Bool
        /// `RandomizedDelaySec=`'s delay for this elapse, in nanoseconds.
        var delay: Int64

        /// Whether the elapse is due at these readings of the clocks.
        func isDue(monotonic now: Int64, wall: WallClockInstant) -> Bool {
            if let monotonic = self.monotonic { return now >= saturatingAdd(monotonic, self.delay) }
            return wall.nanosecondsSinceEpoch >= saturatingAdd(self.occurrence.nanosecondsSinceEpoch, self.delay)
        }

        /// When it is due on the monotonic clock, with the wall clock mapped at these readings.
        func deadline(monotonic now: Int64, wall: WallClockInstant) -> Int64 {
            if let monotonic = self.monotonic { return saturatingAdd(monotonic, self.delay) }
            let left = saturatingSubtract(
                saturatingAdd(self.occurrence.nanosecondsSinceEpoch, self.delay), wall.nanosecondsSinceEpoch)
            return saturatingAdd(now, left)
        }

        /// The elapse, without its delay, on the monotonic clock (to compare triggers).
        func undelayed(monotonic now: Int64, wall: WallClockInstant) -> Int64 {
            self.monotonic
                ?? saturatingAdd(
                    now, saturatingSubtract(self.occurrence.nanosecondsSinceEpoch, wall.nanosecondsSinceEpoch))
        }
    }

    private enum Phase {
        /// Armed for this elapse.
        case waiting(Elapse)
        /// An elapse was taken: its claim or its handler runs.
        case busy(Elapse)
        /// No trigger elapses again; the carrier is paused.
        case elapsed
    }

    private struct State {
        var handle: TimerHandle?
        var phase: Phase = .elapsed
        /// The elapse last taken, and when on the monotonic clock (without its delay).
        var last: Elapse?
        var lastMonotonic: Int64?
        /// The last handler start and end, on the monotonic clock.
        var lastStart: Int64?
        var lastEnd: Int64?
        /// The last occurrence this process ran, and the store's last trigger as read at start.
        var lastRun: WallClockInstant?
        var storeLast: WallClockInstant?
        var runs: UInt64 = 0
        /// Elapses dropped since the last call (busy, or a store that failed).
        var missed: UInt64 = 0
        /// Whether the persistent catch-up was planned or found unneeded.
        var startDone = false
    }

    /// The carrier's period: it never elapses by itself (each call moves its deadline).
    static let idle: Int64 = 365 * 86_400 * 1_000_000_000

    let unit: TimerUnit
    let id: TimerID
    let store: (any TimerStateStore)?
    private let handler: @Sendable (Tick) async -> Void
    private weak let service: (any TimerService)?
    /// `OnActiveSec=`'s zero: the schedule call.
    private let activatedAt: Int64
    /// `OnStartupSec=`'s zero: the service's creation for this package's services.
    private let startedAt: Int64
    /// `FixedRandomDelay=`'s delay, when fixed.
    private let fixedDelay: Int64?
    /// A `SemaphoreGuarded`, not a `Mutex`: ThreadSanitizer does not see the
    /// futex a `Mutex` waits on on Linux, and reports its accesses as races.
    private let state = SemaphoreGuarded(State())
    /// `WakeSystem=`'s alarm, armed at every elapse the carrier waits for.
    private let wakeAlarm: (any TimerWakeAlarm)?

    init(
        unit: TimerUnit, id: TimerID, store: (any TimerStateStore)?, service: any TimerService,
        machineID: [UInt8], wakeAlarm: (any TimerWakeAlarm)?, handler: @escaping @Sendable (Tick) async -> Void
    ) {
        self.wakeAlarm = wakeAlarm
        self.unit = unit
        self.id = id
        self.store = store
        self.handler = handler
        self.service = service
        let now = service.now.nanoseconds
        self.activatedAt = now
        self.startedAt = (service as? any TimerUnitHost)?.units.startedAt.nanoseconds ?? now
        if unit.fixedRandomDelay {
            let machine = store?.isSharedAcrossMachines == true ? FixedRandomDelay.nullID : machineID
            self.fixedDelay =
                FixedRandomDelay.delay(machineID: machine, unit: id, maximum: unit.randomizedDelay)
                .unitNanoseconds
        } else {
            self.fixedDelay = nil
        }
    }

    deinit {
        self.wakeAlarm?.disarm()
    }

    // MARK: TimerUnitRecord

    var handle: TimerHandle {
        self.state.withLock { $0.handle } ?? TimerHandle(id: self.id, generation: 0)
    }

    var nextElapse: WallClockInstant? {
        guard let service = self.service else { return nil }
        let now = service.now.nanoseconds
        let wall = service.wallClockNow
        return self.state.withLock { state in
            guard case .waiting(let elapse) = state.phase else { return nil }
            // A calendar occurrence plus its delay; a monotonic elapse (or the catch-up) mapped
            // to the wall clock now.
            let left = saturatingSubtract(elapse.deadline(monotonic: now, wall: wall), now)
            return WallClockInstant(nanosecondsSinceEpoch: saturatingAdd(wall.nanosecondsSinceEpoch, left))
        }
    }

    var lastTrigger: WallClockInstant? {
        self.state.withLock { state in
            switch (state.lastRun, state.storeLast) {
            case (let run?, let stored?): max(run, stored)
            case (let run, let stored): run ?? stored
            }
        }
    }

    /// Whether nothing of the unit's is under way: its store read at start is done and no claim
    /// or handler runs (tests wait for this between steps of virtual time).
    var isIdle: Bool {
        self.state.withLock { state in
            guard state.startDone else { return false }
            if case .busy = state.phase { return false }
            return true
        }
    }

    // MARK: Starting

    /// Registers the carrier at the first elapse (paused when there is none) and, with a store,
    /// reads the unit's last trigger to plan the persistent catch-up.
    func start(on service: any TimerService) throws -> TimerHandle {
        let now = service.now.nanoseconds
        let wall = service.wallClockNow
        let first = self.state.withLock { state in
            let first = self.plan(&state, monotonic: now, wall: wall, initial: true)
            state.phase = first.map(Phase.waiting) ?? .elapsed
            return first
        }
        let delay = saturatingSubtract(self.carrierDeadline(for: first, monotonic: now, wall: wall), now)
        self.setWakeAlarm(for: first, monotonic: now, wall: wall)
        let options = TimerOptions(executor: .loop, clock: .continuous, tolerance: self.unit.accuracy)
        let handle = try service.scheduleTimer(
            .every(.nanoseconds(Self.idle), startingAfter: .nanoseconds(delay)),
            id: self.id, options: options
        ) { tick in
            self.carrierFired(tick)
        }
        self.state.withLock { $0.handle = $0.handle ?? handle }
        if first == nil { self.pauseCarrier(handle, service: service) }
        if let host = service as? any TimerUnitHost { host.units.insert(self) }
        if let store = self.store {
            Task { await self.readStore(store) }
        } else {
            self.state.withLock { $0.startDone = true }
        }
        return handle
    }

    /// Reads the store's last trigger. When there is one, the unit has triggered before (in an
    /// earlier life of the process, or in another process): a one-time trigger (`OnBootSec=`,
    /// `OnStartupSec=`) that passed before this start is spent, as systemd disables it for a timer
    /// with a last trigger, so a restarted process does not run it again. For a `Persistent=`
    /// unit, plans one catch-up of the latest calendar occurrence missed since then (none without
    /// a stamp, as systemd).
    private func readStore(_ store: any TimerStateStore) async {
        let last: WallClockInstant?
        do {
            last = try await store.lastTrigger(of: self.id)
        } catch {
            self.log("Timer unit could not read its last trigger", detail: "\(error)")
            self.state.withLock { $0.startDone = true }
            return
        }
        guard let service = self.service else { return }
        let now = service.now.nanoseconds
        let wall = service.wallClockNow
        // Done once the catch-up is armed, so that a test sees it armed when the unit is idle.
        defer { self.state.withLock { $0.startDone = true } }
        self.state.withLock { state in
            state.storeLast = last
            // Only while waiting: a run already under way is the start's one run.
            guard let last, case .waiting(let first) = state.phase else { return }
            var next: Elapse? = first
            if let at = first.monotonic, !first.isCalendar, at <= self.activatedAt {
                next = self.plan(&state, monotonic: now, wall: wall, initial: true, triggeredBefore: true)
            }
            if self.unit.persistent,
                let missed = self.unit.onCalendar.compactMap({ $0.occurrences(after: last, notAfter: wall)?.latest })
                    .max()
            {
                // As systemd: a missed occurrence is moved to the start, then delayed as any other.
                next = Elapse(
                    occurrence: missed, monotonic: self.activatedAt, isCalendar: true, delay: self.randomDelay())
            }
            state.phase = next.map(Phase.waiting) ?? .elapsed
            guard Self.isCurrent(state.handle, self.id, service) else { return }
            if next == nil { self.pauseCarrier(state.handle, service: service) }
            self.move(to: next, handle: state.handle, isChecked: false, service: service, monotonic: now, wall: wall)
        }
    }

    // MARK: Running

    /// The carrier's handler, on the service's thread: takes the elapse when it is due.
    private func carrierFired(_ tick: Tick) {
        guard let service = self.service else { return }
        let now = service.now.nanoseconds
        let wall = service.wallClockNow
        // The carrier is this unit's (its handler runs): it is moved without asking.
        let taken: Elapse? = self.state.withLock { state in
            state.handle = state.handle ?? tick.handle
            guard case .waiting(let elapse) = state.phase, elapse.isDue(monotonic: now, wall: wall) else {
                let waiting: Elapse? = if case .waiting(let elapse) = state.phase { elapse } else { nil }
                self.move(
                    to: waiting, handle: tick.handle, isChecked: false, service: service, monotonic: now, wall: wall)
                return nil
            }
            state.phase = .busy(elapse)
            state.last = elapse
            state.lastMonotonic = elapse.undelayed(monotonic: now, wall: wall)
            self.move(to: nil, handle: tick.handle, isChecked: false, service: service, monotonic: now, wall: wall)
            return elapse
        }
        guard let taken else { return }
        let scheduledAt = taken.deadline(monotonic: now, wall: wall)
        Task { await self.run(taken, scheduledAt: scheduledAt, tolerance: tick.tolerance) }
    }

    /// Claims the occurrence, runs the handler, and plans the next elapse.
    private func run(_ elapse: Elapse, scheduledAt: Int64, tolerance: Duration) async {
        var claimed = true
        if let store = self.store {
            switch await self.claim(elapse.occurrence, from: store) {
            case .some(let answer): claimed = answer
            case .none:
                claimed = false
                self.state.withLock { $0.missed += 1 }
            }
        }
        if claimed, let service = self.service, Self.isCurrent(self.state.withLock { $0.handle }, self.id, service) {
            let firedAt = service.now
            let tick = self.state.withLock { state in
                state.runs += 1
                state.lastStart = firedAt.nanoseconds
                state.lastRun = elapse.occurrence
                defer { state.missed = 0 }
                return Tick(
                    id: self.id, count: state.runs, missed: state.missed,
                    scheduledAt: MonotonicInstant(nanoseconds: scheduledAt), firedAt: firedAt,
                    generation: state.handle?.generation ?? 0,
                    wallClockDeadline: elapse.isCalendar ? elapse.occurrence : nil, tolerance: tolerance)
            }
            await self.handler(tick)
            if let service = self.service {
                let end = service.now.nanoseconds
                self.state.withLock { $0.lastEnd = end }
            }
        }
        self.finish()
    }

    /// After a run (or a skipped one): plans the next elapse from the clocks now.
    private func finish() {
        guard let service = self.service else { return }
        let now = service.now.nanoseconds
        let wall = service.wallClockNow
        self.state.withLock { state in
            let next = self.plan(&state, monotonic: now, wall: wall, initial: false)
            state.phase = next.map(Phase.waiting) ?? .elapsed
            guard Self.isCurrent(state.handle, self.id, service) else { return }
            if next == nil { self.pauseCarrier(state.handle, service: service) }
            self.move(to: next, handle: state.handle, isChecked: false, service: service, monotonic: now, wall: wall)
        }
    }

    /// Moves the carrier to `elapse` (a year out for `nil`): at most `max(AccuracySec=, 1 min)`
    /// ahead for a calendar elapse, so that a wall clock stepped forward is noticed within that.
    /// Called with `state` locked, so that the phase and the carrier's deadline change together
    /// (the service calls no handler under its own locks, so this nests only one way). `handle`:
    /// the carrier's, moved only while it still names the carrier; `isChecked` false from the
    /// carrier's own handler, whose tick names it.
    private func move(
        to elapse: Elapse?, handle: TimerHandle?, isChecked: Bool = true, service: any TimerService,
        monotonic now: Int64, wall: WallClockInstant
    ) {
        if isChecked, !Self.isCurrent(handle, self.id, service) { return }
        self.setWakeAlarm(for: elapse, monotonic: now, wall: wall)
        let deadline = MonotonicInstant(nanoseconds: self.carrierDeadline(for: elapse, monotonic: now, wall: wall))
        if let handle, let host = service as? any TimerUnitHost {
            _ = host.reschedule(handle, at: deadline)
        } else {
            _ = try? service.reschedule(self.id, at: deadline)
        }
    }

    /// Pauses the carrier: by its handle where the service can (see ``TimerUnitHost``).
    private func pauseCarrier(_ handle: TimerHandle?, service: any TimerService) {
        if let handle, let host = service as? any TimerUnitHost {
            _ = host.pause(handle)
        } else {
            service.pause(self.id)
        }
    }

    /// Arms `WakeSystem=`'s alarm at `elapse` (its own deadline, not the carrier's capped one), or
    /// disarms it for none.
    private func setWakeAlarm(for elapse: Elapse?, monotonic now: Int64, wall: WallClockInstant) {
        guard let alarm = self.wakeAlarm else { return }
        guard let elapse else { return alarm.disarm() }
        alarm.arm(after: .nanoseconds(saturatingSubtract(elapse.deadline(monotonic: now, wall: wall), now)))
    }

    /// Where the carrier waits for `elapse`: its deadline, but at most `max(AccuracySec=, 1 min)`
    /// ahead for a calendar elapse (see ``move(to:handle:isChecked:service:monotonic:wall:)``), and a year
    /// out for none.
    private func carrierDeadline(for elapse: Elapse?, monotonic now: Int64, wall: WallClockInstant) -> Int64 {
        var deadline = saturatingAdd(now, Self.idle)
        if let elapse {
            deadline = min(deadline, max(now, elapse.deadline(monotonic: now, wall: wall)))
            if elapse.monotonic == nil {
                let recheck = max(self.unit.accuracy.unitNanoseconds, 60_000_000_000)
                deadline = min(deadline, saturatingAdd(now, recheck))
            }
        }
        return deadline
    }

    /// Whether the carrier is still this unit's (not cancelled, its ID not taken by another
    /// timer). Exact on this package's services; on a conformer of your own, whether the ID is
    /// scheduled.
    private static func isCurrent(_ handle: TimerHandle?, _ id: TimerID, _ service: any TimerService) -> Bool {
        guard let handle, let host = service as? any TimerUnitHost else { return service.isScheduled(id) }
        return host.isCurrent(handle)
    }

    /// Asks the store; retries a store that throws, with a backoff from 100 ms doubling to 5 s, for
    /// as long as `AccuracySec=` (at least one second) after the first try. `nil`: the store never
    /// answered (logged).
    private func claim(_ occurrence: WallClockInstant, from store: any TimerStateStore) async -> Bool? {
        guard let service = self.service else { return nil }
        let giveUp = service.now.advanced(by: max(self.unit.accuracy, .seconds(1)))
        var backoff = Duration.milliseconds(100)
        var attempts = 0
        while true {
            attempts += 1
            do {
                return try await store.claim(occurrence, of: self.id)
            } catch {
                let now = service.now
                guard now.advanced(by: backoff) <= giveUp else {
                    self.log(
                        "Timer unit skipped an occurrence: the store did not answer",
                        detail: "\(occurrence) after \(attempts) attempts: \(error)")
                    return nil
                }
                do {
                    try await service.clock.sleep(until: now.advanced(by: backoff))
                } catch {
                    return nil
                }
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    // MARK: Planning

    /// The earliest next elapse over every trigger, counting into `state.missed` the elapses that
    /// passed while the unit was busy. `initial`: at the schedule call (one-time triggers already
    /// passed elapse at once, as in systemd for a timer that has not triggered yet, unless
    /// `triggeredBefore`: the store knows a last trigger).
    private func plan(
        _ state: inout State, monotonic now: Int64, wall: WallClockInstant, initial: Bool,
        triggeredBefore: Bool = false
    ) -> Elapse? {
        var best: (at: Int64, elapse: Elapse)?
        func consider(_ elapse: Elapse) {
            let at = elapse.undelayed(monotonic: now, wall: wall)
            if best == nil || at < best!.at { best = (at, elapse) }
        }
        func monotonic(_ at: Int64) -> Elapse {
            let occurrence = WallClockInstant(
                nanosecondsSinceEpoch: saturatingAdd(wall.nanosecondsSinceEpoch, saturatingSubtract(at, now)))
            return Elapse(occurrence: occurrence, monotonic: at, isCalendar: false, delay: 0)
        }
        var missed: UInt64 = 0
        for schedule in self.unit.onCalendar {
            if !initial, let last = state.last,
                let passed = schedule.occurrences(after: last.occurrence, notAfter: wall)
            {
                missed &+= passed.passed
            }
            if let next = schedule.next(after: wall) {
                consider(Elapse(occurrence: next, monotonic: nil, isCalendar: true, delay: 0))
            }
        }
        // One-time triggers: OnActiveSec= (from the schedule call), OnBootSec= (from the monotonic
        // clock's zero: the boot), OnStartupSec= (from the service's start).
        let oneTime: [(Int64, [Duration])] = [
            (self.activatedAt, self.unit.onActive), (0, self.unit.onBoot), (self.startedAt, self.unit.onStartup),
        ]
        for (zero, spans) in oneTime {
            for span in spans {
                let at = saturatingAdd(zero, span.unitNanoseconds)
                if (initial && !triggeredBefore) || at > now {
                    consider(monotonic(at))
                } else if let last = state.lastMonotonic, at > last {
                    missed &+= 1
                }
            }
        }
        // OnUnitActiveSec= from the last start, OnUnitInactiveSec= from the last end; the last
        // elapse taken counts as a start when no handler ran (as systemd's last trigger does).
        let periodic: [(Int64?, [Duration])] = [
            (Self.latest(state.lastStart, state.lastMonotonic), self.unit.onUnitActive),
            (Self.latest(state.lastEnd, state.lastMonotonic), self.unit.onUnitInactive),
        ]
        for (base, spans) in periodic {
            guard let base, !initial else { continue }
            for span in spans {
                let step = max(span.unitNanoseconds, TimerLimits.minimumIntervalNanoseconds)
                var at = saturatingAdd(base, step)
                if at <= now {
                    // Elapses passed while busy: dropped, and the next one after now.
                    let skipped = saturatingSubtract(now, at) / step + 1
                    missed &+= UInt64(skipped)
                    at = saturatingAdd(at, skipped &* step)
                }
                consider(monotonic(at))
            }
        }
        state.missed &+= missed
        guard var elapse = best?.elapse else { return nil }
        elapse.delay = self.randomDelay()
        return elapse
    }

    private static func latest(_ a: Int64?, _ b: Int64?) -> Int64? {
        switch (a, b) {
        case (let a?, let b?): max(a, b)
        case (let a, let b): a ?? b
        }
    }

    /// `RandomizedDelaySec=`: the fixed delay, or a uniform one in `[0, delay]`.
    private func randomDelay() -> Int64 {
        if let fixed = self.fixedDelay { return fixed }
        let maximum = self.unit.randomizedDelay.unitNanoseconds
        guard maximum > 0 else { return 0 }
        return Int64.random(in: 0...maximum)
    }

    private func log(_ message: String, detail: String) {
        (self.service as? any TimerUnitHost)?.logUnitEvent(message, id: self.id, detail: detail)
    }
}

extension Duration {
    /// Whole nanoseconds, rounded up, clamped to `0...TimerLimits.maximumNanoseconds` (a unit's
    /// spans are checked before they get here).
    fileprivate var unitNanoseconds: Int64 {
        self < .zero ? 0 : (self.timerNanoseconds ?? TimerLimits.maximumNanoseconds)
    }
}
