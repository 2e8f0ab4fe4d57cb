import Dispatch
import PreciseTimerCore

/// A ``TimerService`` on virtual time, for unit-testing code that uses timers: nothing fires
/// until the test moves time with ``advance(by:)`` or ``advance(to:)``, which fire every timer
/// due on the way, at its exact deadline, in order, on the calling thread, and return when they
/// are done.
///
/// It is the same scheduling logic as `PreciseTimer` (the same registry, ordering, missed-tick
/// policies, errors and cancel guarantee) with a clock that stands still, in the spirit of
/// SwiftNIO's `EmbeddedEventLoop` and swift-clocks' `TestClock`:
///
/// ```swift
/// let timers = TestTimerService()
/// let session = Session(timers: timers, idleTimeout: .seconds(30))
/// try timers.advance(by: .seconds(29))   // throws only for a negative or too long duration
/// #expect(!session.isExpired)
/// try timers.advance(by: .seconds(1))
/// #expect(session.isExpired)
/// ```
///
/// Time never moves by itself, not even for a `.zero` delay: `advance(by: .zero)` fires what is
/// due now. Handlers may schedule, reschedule and cancel timers (a timer they schedule for a
/// deadline within the advance fires in the same advance), step the wall clock with
/// ``setWallClock(to:)`` and suspend with ``suspend(for:)`` (what that makes due fires in the same
/// advance, after the handler returns), but must not call ``advance(by:)``: that is a misuse and
/// traps. ``TimerExecutor/queue(_:)`` handlers run on their queue, and
/// `advance` waits for each (so never advance from that queue). ``TimerClock`` and
/// ``TickSequence`` work on it: a `sleep` resumes when `advance` passes its deadline.
///
/// - Important: `advance` must be called from one thread at a time.
public final class TestTimerService: TimerCoreService {
    private let clock: ManualDriver
    package let core: TimerCore
    /// ``core``, unretained (see ``TimerCoreService/coreReference``).
    package var coreReference: Unmanaged<TimerCore> { .passUnretained(self.core) }
    package let units: TimerUnitTable
    private let advancing = SemaphoreGuarded(false)
    /// The `WakeSystem=` alarms made for units, by unit ID (the latest for each).
    private let alarms = SemaphoreGuarded<[TimerID: VirtualWakeAlarm]>([:])

    /// The wall clock a test service starts at unless told otherwise: 2026-01-01T00:00:00Z.
    public static let defaultWallClock = WallClockInstant(nanosecondsSinceEpoch: 1_767_225_600_000_000_000)

    /// Creates a service whose clocks start at `start` (monotonic and continuous) and `wallClock`.
    ///
    /// - Parameters:
    ///   - start: The initial virtual time; by default 1 000 s after the clock's origin, so tests
    ///     can go back from it.
    ///   - wallClock: The initial wall clock; by default ``defaultWallClock``.
    public convenience init(
        start: MonotonicInstant = MonotonicInstant(nanoseconds: 1_000_000_000_000),
        wallClock: WallClockInstant = TestTimerService.defaultWallClock
    ) {
        self.init(start: start, wallClock: wallClock, instruments: .disabled)
    }

    /// Creates a service that logs and records its events like a `PreciseTimer` would, on
    /// virtual time (tests of the instruments).
    package init(
        start: MonotonicInstant = MonotonicInstant(nanoseconds: 1_000_000_000_000),
        wallClock: WallClockInstant = TestTimerService.defaultWallClock, instruments: TimerInstruments
    ) {
        self.clock = ManualDriver(now: start.nanoseconds, wallClock: wallClock.nanosecondsSinceEpoch)
        self.core = TimerCore(doorbell: self.clock, hopsSynchronously: true, instruments: instruments)
        self.units = TimerUnitTable(startedAt: self.core.now)
    }

    deinit {
        self.shutdown()
    }

    // MARK: Moving time

    /// Steps the wall clock to `instant`, as NTP or `settimeofday` does: the monotonic and
    /// continuous clocks stay. Wall-clock timers follow the step at once: the ones it made due
    /// fire here, before it returns (as ``advance(by:)`` with `.zero` would), and the ones it
    /// moved away wait for the wall clock to reach them again. An occurrence already fired never
    /// fires again, even when the step goes back over it.
    ///
    /// It cannot fail, and may be called from a handler: the step is made at once, and the timers
    /// it made due fire in the advance that runs the handler, after the handler returns (as a
    /// timer the handler schedules for now would). Any instant reads back exactly from
    /// ``/PreciseTimerCore/TimerService/wallClockNow``, `Int64.min` and `Int64.max` nanoseconds
    /// included; as time goes on from near an end, the wall clock stops at that end rather than
    /// wrapping to the other.
    public func setWallClock(to instant: WallClockInstant) {
        self.clock.setWallClock(instant.nanosecondsSinceEpoch)
        self.core.rebase()
        self.fireWhatBecameDue()
    }

    /// Suspends the virtual machine for `duration`: the wall and continuous clocks move, the
    /// monotonic (suspending) one does not, as on Linux. At resume, what became due fires here,
    /// before it returns: wall-clock and ``TimerOptions/ClockKind/continuous`` timers whose
    /// deadlines passed while asleep, with their missed occurrences or periods per their
    /// ``MissedTickPolicy``. ``TimerOptions/ClockKind/suspending`` timers do not move.
    ///
    /// Like ``setWallClock(to:)``, it cannot fail, and may be called from a handler (what the
    /// suspend made due fires in the advance that runs the handler, after the handler returns): a
    /// machine cannot sleep for less than nothing, so a negative duration suspends for no time at
    /// all, and one beyond ``TimerService/maximumDuration`` for that long. A wall clock it carries
    /// past `Int64.max` nanoseconds reads `Int64.max`.
    public func suspend(for duration: Duration) {
        let nanoseconds =
            (try? duration.validatedDelay(for: nil))
            ?? (duration < .zero ? 0 : TimerLimits.maximumNanoseconds)
        self.clock.suspend(nanoseconds)
        self.core.rebase()
        self.fireWhatBecameDue()
    }

    /// Fires what a clock change made due, as `advance(by: .zero)` would, unless an advance is
    /// running: the change then came from one of its handlers (or, misused, from another thread
    /// during it), and that advance fires what is due before it returns.
    private func fireWhatBecameDue() {
        guard self.claimAdvance() else { return }
        defer { self.advancing.withLock { $0 = false } }
        self.runDue(to: self.clock.now())
    }

    /// Marks an advance as running; `false` if one already is.
    private func claimAdvance() -> Bool {
        self.advancing.withLock { advancing in
            defer { advancing = true }
            return !advancing
        }
    }

    /// Moves time forward by `duration`, firing every timer due on the way at its deadline.
    ///
    /// - Throws: ``PreciseTimerError/Code/invalidDelay`` for a negative or too long duration.
    public func advance(by duration: Duration) throws(PreciseTimerError) {
        let nanoseconds = try duration.validatedDelay(for: nil)
        let now = self.clock.now()
        try self.advance(
            to: MonotonicInstant(nanoseconds: try TimerRequest.deadline(now: now, after: nanoseconds, id: nil)))
    }

    /// Moves time forward to `instant`, firing every timer due on the way at its deadline. An
    /// instant in the past fires what is due now and leaves the clock where it is.
    ///
    /// - Throws: ``PreciseTimerError/Code/invalidDelay`` when `instant` is beyond
    ///   ``TimerService/maximumDuration`` from now.
    public func advance(to instant: MonotonicInstant) throws(PreciseTimerError) {
        let target = try TimerRequest.validated(instant, now: self.clock.now(), id: nil)
        let claimed = self.claimAdvance()
        precondition(claimed, "TestTimerService.advance called from a handler or from two threads at once")
        defer { self.advancing.withLock { $0 = false } }
        self.runDue(to: target)
    }

    /// The body of an advance: fires every timer due up to `target`, moving the clock there.
    private func runDue(to target: Int64) {
        // Bounded by `target`: a handler that moves the clock (as if it ran long) cannot make the
        // advance chase its own clock forever.
        while true {
            let outcome = self.core.runDue(notAfter: target)
            self.assertInvariants()
            switch outcome {
            case .batchLimitReached:
                continue
            case .idle(let next) where next <= target:
                self.clock.set(next)
            case .idle, .empty:
                self.clock.set(target)
                // What the last handlers scheduled for exactly `target`.
                while self.core.runDue(notAfter: target) == .batchLimitReached {}
                return
            }
        }
    }

    /// After each pass of the loop, in debug builds: the registry's invariants hold
    /// (``TimerCore/invariantViolations()``). Skipped above a few thousand timers, where the O(n)
    /// check would make a large test quadratic.
    private func assertInvariants() {
        assert(
            self.core.scheduledCount > Self.invariantCheckLimit || self.core.invariantViolations().isEmpty,
            "TestTimerService: registry invariants broken: \(self.core.invariantViolations())")
    }

    private static let invariantCheckLimit = 4_096

    /// Fires what is due at the earliest pending deadline, moving time there first if it is in
    /// the future (a deadline already passed fires without moving time). Timers due later are
    /// left alone, even when one is due right after: call it again for them.
    ///
    /// - Returns: `false` (nothing fired, time unchanged) only when no timer is pending.
    @discardableResult
    public func advanceToNextDeadline() -> Bool {
        guard let next = self.nextDeadline else { return false }
        try? self.advance(to: next)
        return true
    }

    /// The instant at which the earliest pending (not paused) timer is due to fire, if any,
    /// possibly in the past: the key the registry orders timers by, which is not always a
    /// timer's deadline. For a timer with a ``TimerOptions/tolerance`` it is the point of the
    /// tolerance's grid the timer fires at (at or after its deadline, at most the tolerance
    /// later); for a wall-clock or ``TimerOptions/ClockKind/continuous`` timer, its current
    /// estimate on the monotonic clock. ``TimerService/deadline(of:)`` reads one timer's
    /// deadline, before any tolerance. A pure read: it fires nothing, so it is safe from a
    /// handler and from any thread.
    public var nextDeadline: MonotonicInstant? {
        self.core.earliestDeadline
    }

    /// How often the service would have rung a real loop's doorbell: a timer scheduled (or moved)
    /// from outside the loop with a deadline earlier than the one the loop sleeps until. Not the
    /// loop's wake-ups to run timers: those are ``loopWakeUps``.
    public var wakeUps: Int { self.clock.wakes }

    /// How often a real loop would have woken to run timers: the instants ``advance(by:)`` and
    /// its relatives stopped at to run what was due there (a pass that ran at least one timer).
    /// Timers with a tolerance (``TimerOptions/tolerance``) whose deadlines fall in one cell of
    /// their grid share one, so coalescing can be tested exactly. This is what
    /// ``TimerMetricsRecorder/loopWokeUp()`` (the `_wakeups_total` metric) counts on a real
    /// service; doorbell rings are ``wakeUps``.
    public var loopWakeUps: Int { self.core.wakeUps }

    /// Moves the clock without firing anything, as if the loop were blocked (or, from a handler,
    /// as if the handler ran that long); the next `advance` catches up. Never moves back.
    package func moveClock(to instant: MonotonicInstant) {
        self.clock.set(instant.nanoseconds)
    }

    // MARK: Wake alarms

    /// `WakeSystem=`'s alarm on virtual time: it wakes nothing, and records where it is armed
    /// (read it with ``wakeAlarm(of:)``).
    package func makeWakeAlarm(for id: TimerID) throws(PreciseTimerError) -> any TimerWakeAlarm {
        let alarm = VirtualWakeAlarm(clock: self.clock)
        self.alarms.withLock { $0[id] = alarm }
        return alarm
    }

    /// Where the `WakeSystem=` alarm of the unit `id` is armed (its delay added to the monotonic
    /// time of its arming); `nil` when it is disarmed or there is none.
    package func wakeAlarm(of id: TimerID) -> MonotonicInstant? {
        self.alarms.withLock { $0[id] }?.deadline
    }

    // MARK: TimerService

    /// Nothing to stop: time moves only in ``advance(by:)``.
    package func stopEngine() {}
}

/// A `WakeSystem=` alarm on virtual time: where it is armed, nothing more.
private final class VirtualWakeAlarm: TimerWakeAlarm, Sendable {
    private let clock: ManualDriver
    private let armed = SemaphoreGuarded<MonotonicInstant?>(nil)

    init(clock: ManualDriver) {
        self.clock = clock
    }

    var deadline: MonotonicInstant? { self.armed.withLock { $0 } }

    func arm(after delay: Duration) {
        let at = MonotonicInstant(nanoseconds: self.clock.now()).advanced(by: max(delay, .zero))
        self.armed.withLock { $0 = at }
    }

    func disarm() {
        self.armed.withLock { $0 = nil }
    }
}
