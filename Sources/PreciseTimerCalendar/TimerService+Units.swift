import PreciseTimerCore

extension TimerService {
    /// Runs a systemd timer unit in process: `handler` runs at every elapse of `unit`, as systemd
    /// would start the unit's service.
    ///
    /// ```swift
    /// let unit = try TimerUnit("""
    ///     OnCalendar=*-*-* 02:00
    ///     RandomizedDelaySec=30min
    ///     Persistent=true
    ///     """)
    /// let store = try DirectoryTimerStateStore(directory: "/var/lib/my-daemon/timers")
    /// try timers.schedule(unit: unit, id: "backup", store: store) { tick in
    ///     await runBackup()
    /// }
    /// ```
    ///
    /// **Elapses.** The next elapse is the earliest over every trigger: each `OnCalendar=`
    /// schedule (on the wall clock, followed through steps within `max(AccuracySec=, 1 min)`, and
    /// through suspend); `OnActiveSec=` from this call; `OnBootSec=` from the boot (the zero of
    /// the monotonic clock, which on Linux is the boot, suspend left out, as systemd counts it);
    /// `OnStartupSec=` from the service's creation (this package's services; for a conformer of
    /// your own, from this call); `OnUnitActiveSec=` from the last handler start and
    /// `OnUnitInactiveSec=` from the last handler end (the end of the async handler). As in
    /// systemd, the last two wait for a first run (pair them with `OnActiveSec=` or
    /// `OnBootSec=`), and `OnActiveSec=`, `OnBootSec=` and `OnStartupSec=` elapse once each; one
    /// that has already passed at this call elapses at once, since the unit has not triggered
    /// yet, unless the store holds a last trigger for it (it triggered in an earlier life of the
    /// process, or in another): then it is spent, as systemd disables it, and a restart does not
    /// run it again.
    ///
    /// **Settings.** `AccuracySec=` is the carrier timer's
    /// ``/PreciseTimerCore/TimerOptions/tolerance``. `RandomizedDelaySec=` delays each elapse by
    /// a uniform random span in `[0, delay]`; with `FixedRandomDelay=` that span is systemd's for
    /// the (machine, unit) pair (a SipHash of `/etc/machine-id` and `id`), or for the unit alone
    /// when the store is shared by machines (``TimerStateStore/isSharedAcrossMachines``).
    /// `WakeSystem=` (on `PreciseTimer`) keeps a `CLOCK_BOOTTIME_ALARM` timerfd armed at the next
    /// elapse beside the unit's timer, so a suspended machine wakes for it; the unit runs when its
    /// timer fires after the resume.
    ///
    /// **Runs.** The handler runs as a task, after the store (if any) has said this process runs
    /// the occurrence (``TimerStateStore/claim(_:of:)`` with the schedule's instant, not the time
    /// of the call). `false`: skipped silently (another process ran it). A store that throws is
    /// asked again (backoff from 100 ms) for `AccuracySec=` (at least 1 s), then the occurrence
    /// is logged and counted as missed, and never run. A unit never overlaps itself: an elapse
    /// that comes while its handler runs is dropped and counted in the next call's
    /// ``/PreciseTimerCore/Tick/missed``, and the next run is the next elapse after the handler
    /// returns, never a catch-up right behind it. A tick's
    /// ``/PreciseTimerCore/Tick/wallClockDeadline`` is the calendar occurrence it answers (`nil`
    /// for the monotonic triggers), ``/PreciseTimerCore/Tick/scheduledAt`` its elapse with the
    /// random delay. The occurrence of a monotonic trigger is its elapse on the wall clock as
    /// this process maps it, so processes sharing a store agree exactly only on calendar
    /// occurrences; and as a store refuses occurrences that are not after its last trigger, a
    /// wall clock stepped back holds a monotonic trigger's runs until it passes that trigger.
    ///
    /// **Persistent=.** With a store, the unit reads its last trigger when scheduled; when an
    /// `OnCalendar=` occurrence passed after it, one catch-up runs at start (after the random
    /// delay, as in systemd), claiming the latest missed occurrence, so that processes sharing
    /// the store run it once between them. Without a stamp (the store never saw the unit) there
    /// is no catch-up, as in systemd: the first run is the first occurrence after now.
    ///
    /// **Identity.** The unit is one repeating timer under `id`, whose deadline the unit moves
    /// after each run, so the returned handle names the unit for its whole life:
    /// `cancel(handle)` or `cancel(id)` ends it, ``listTimers()`` lists it, `pause`/`resume`
    /// work. Once cancelled, no run begins (a claim under way is dropped after it answers); a
    /// handler already running is not cancelled and finishes, and the handler is released when it
    /// returns. A unit whose triggers will never elapse again stays scheduled, paused, like a
    /// systemd timer in state `elapsed`.
    ///
    /// - Parameters:
    ///   - unit: The unit's `[Timer]` section.
    ///   - id: The unit's ID (its name in the store and in listings).
    ///   - store: Where the last trigger is kept and who runs an occurrence; `nil` runs every
    ///     elapse.
    ///   - handler: Runs at every elapse this process claims, as a task.
    /// - Returns: The handle of the timer that carries the unit.
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError``, and nothing is scheduled then:
    ///   - ``/PreciseTimerCore/PreciseTimerError/Code/invalidSchedule`` for a unit without any
    ///     trigger;
    ///   - ``/PreciseTimerCore/PreciseTimerError/Code/invalidDelay`` for a negative span;
    ///   - ``/PreciseTimerCore/PreciseTimerError/Code/invalidConfiguration`` for `Persistent=`
    ///     without a store (there is nowhere to read a last trigger from), and for `WakeSystem=`
    ///     on a service without an alarm clock (`DispatchReferenceTimer`, a conformer of your
    ///     own);
    ///   - ``/PreciseTimerCore/PreciseTimerError/Code/systemFailure`` naming `timerfd_create` when
    ///     the system refuses `PreciseTimer` the alarm clock (`errno` `EPERM`: the process lacks
    ///     `CAP_WAKE_ALARM`);
    ///   - what ``/PreciseTimerCore/TimerService/scheduleTimer(_:id:options:_:)`` throws
    ///     (``/PreciseTimerCore/PreciseTimerError/Code/emptyID``,
    ///     ``/PreciseTimerCore/PreciseTimerError/Code/duplicateID``,
    ///     ``/PreciseTimerCore/PreciseTimerError/Code/shutDown``).
    @discardableResult
    public func schedule(
        unit: TimerUnit, id: TimerID, store: (any TimerStateStore)? = nil,
        _ handler: @escaping @Sendable (Tick) async -> Void
    ) throws -> TimerHandle {
        try self.schedule(unit: unit, id: id, store: store, machineID: nil, handler)
    }

    /// ``schedule(unit:id:store:_:)`` with the machine ID given (16 bytes) instead of read from
    /// `/etc/machine-id`: for tests of `FixedRandomDelay=`.
    @discardableResult
    package func schedule(
        unit: TimerUnit, id: TimerID, store: (any TimerStateStore)?, machineID: [UInt8]?,
        _ handler: @escaping @Sendable (Tick) async -> Void
    ) throws -> TimerHandle {
        try Self.check(unit, id: id, store: store)
        let machine = unit.fixedRandomDelay ? (machineID ?? FixedRandomDelay.machineID()) : FixedRandomDelay.nullID
        let alarm = try unit.wakeSystem ? Self.wakeAlarm(on: self, for: id) : nil
        let run = TimerUnitRun(
            unit: unit, id: id, store: store, service: self, machineID: machine, wakeAlarm: alarm, handler: handler)
        return try run.start(on: self)
    }

    /// Whether the unit under `id` has nothing under way (no claim, no handler, no store read):
    /// `true` also when there is no such unit. For tests on virtual time.
    package func isUnitIdle(_ id: TimerID) -> Bool {
        guard let run = (self as? any TimerUnitHost)?.units.record(for: id) as? TimerUnitRun else { return true }
        return run.isIdle
    }

    /// Refuses a unit this call cannot run (see ``schedule(unit:id:store:_:)``).
    private static func check(_ unit: TimerUnit, id: TimerID, store: (any TimerStateStore)?) throws(PreciseTimerError) {
        let spans = unit.onActive + unit.onBoot + unit.onStartup + unit.onUnitActive + unit.onUnitInactive
        guard !unit.onCalendar.isEmpty || !spans.isEmpty else {
            throw PreciseTimerError(
                .invalidSchedule, id: id,
                detail: "no trigger: a timer unit needs OnCalendar= or OnActiveSec=, OnBootSec=, OnStartupSec=, "
                    + "OnUnitActiveSec=, OnUnitInactiveSec=")
        }
        for span in spans + [unit.accuracy, unit.randomizedDelay] where span < .zero {
            throw PreciseTimerError(.invalidDelay, id: id, value: "\(span)")
        }
        if unit.persistent && store == nil {
            throw PreciseTimerError(
                .invalidConfiguration, id: id, value: "Persistent=yes",
                detail: "Persistent= needs a TimerStateStore to keep the last trigger in")
        }
    }

    /// `WakeSystem=`'s alarm, from a service of this package that has one.
    private static func wakeAlarm(on service: Self, for id: TimerID) throws(PreciseTimerError) -> any TimerWakeAlarm {
        guard let host = service as? any TimerUnitHost else {
            throw PreciseTimerError(
                .invalidConfiguration, id: id, value: "WakeSystem=yes",
                detail: "\(Self.self) has no alarm clock to wake the machine with; PreciseTimer has one")
        }
        return try host.makeWakeAlarm(for: id)
    }
}
