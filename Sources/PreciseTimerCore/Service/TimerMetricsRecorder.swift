/// Receives a timer service's events, for metrics: timers scheduled, fired (with lateness and
/// missed periods), cancelled and otherwise ended, from which a recorder also keeps the number of
/// pending timers.
///
/// Set one in `PreciseTimer.Configuration.metrics` to turn metrics on; with `nil` (the default)
/// the service checks one optional per event and records nothing. The `PreciseTimerMetrics`
/// product implements it on swift-metrics (`SwiftMetricsRecorder`), so only a daemon that wants
/// metrics builds swift-metrics.
///
/// ### The pending count
///
/// A timer is *pending* from its successful `schedule` until it ends (a one-shot's call begins,
/// it is cancelled, or the service shuts down or fails); a paused timer and a repeating timer
/// whose handler runs are pending. The events add up exactly: pending equals
/// ``timerScheduled()`` calls minus the `count`s of ``timersCancelled(_:)`` and
/// ``timersEnded(_:)`` minus the ``timerFired(latenessNanoseconds:missed:ended:)`` calls with
/// `ended` true, minus the ``timerScheduleRefused()`` calls. ``timerScheduled()`` comes just
/// *before* its timer becomes visible to other threads, so no event of that timer can arrive
/// ahead of it and a count kept from the events never goes below zero; the other events come
/// after the change they report. A recorder that keeps the count may briefly disagree with
/// ``TimerService/scheduledCount``, but never drifts from it.
///
/// A recorder is a class (one object shared by the service's threads), which also keeps the
/// check for "no recorder" to one pointer comparison.
///
/// - Important: Every method is called on the thread where the event happens (the thread that
///   schedules or cancels, the service's loop thread, or a handler's queue), possibly on several
///   threads at once, never under the service's lock. Keep each call O(1) and non-blocking (an
///   atomic increment, not a lock held for long, no I/O), and do not call back into the service.
public protocol TimerMetricsRecorder: AnyObject, Sendable {
    /// A timer is being scheduled: one more timer is pending. Called once its request is valid,
    /// just before the timer becomes visible; if the registry then refuses it (its explicit ID
    /// is taken, or the service shut down meanwhile), ``timerScheduleRefused()`` follows. Not
    /// called for a `schedule` that threw before that (bad input).
    func timerScheduled()

    /// The timer of the last ``timerScheduled()`` on this thread was refused by the registry
    /// (a duplicate ID, or a shutdown in between): one fewer pending. The default implementation
    /// reports it as ``timersEnded(_:)`` with a count of 1.
    func timerScheduleRefused()

    /// The loop woke and ran timers (one pass, however many it ran): what tolerance saves
    /// (``TimerOptions/tolerance``). The default implementation records nothing.
    func loopWokeUp()

    /// A handler call is about to begin (on the loop thread, or on the timer's queue after the
    /// hop).
    ///
    /// - Parameters:
    ///   - latenessNanoseconds: How late the call is, in nanoseconds: the tick's
    ///     ``Tick/lateness`` (never negative).
    ///   - missed: The tick's ``Tick/missed``: whole periods skipped just before this call.
    ///   - ended: `true` when the timer ended with this call (a one-shot): one fewer pending.
    func timerFired(latenessNanoseconds: Int64, missed: UInt64, ended: Bool)

    /// A handler call is about to begin, with its lateness split: what the service calls. The
    /// default implementation forwards to ``timerFired(latenessNanoseconds:missed:ended:)``, so a
    /// recorder written before the split keeps its behaviour.
    ///
    /// - Parameters:
    ///   - latenessNanoseconds: The tick's ``Tick/lateness`` in nanoseconds.
    ///   - excessLatenessNanoseconds: The tick's ``Tick/excessLateness``: lateness beyond the
    ///     timer's tolerance, the figure to alert on.
    ///   - missed: The tick's ``Tick/missed``.
    ///   - ended: `true` when the timer ended with this call (a one-shot): one fewer pending.
    func timerFired(latenessNanoseconds: Int64, excessLatenessNanoseconds: Int64, missed: UInt64, ended: Bool)

    /// Timers were cancelled (``TimerService/cancel(_:)-(TimerID)``, ``TimerService/cancelAll()``, and
    /// everything built on them: tokens, weak targets, tick sequences, clock sleeps): `count`
    /// fewer pending.
    ///
    /// - Parameter count: How many timers were cancelled, at least 1.
    func timersCancelled(_ count: Int)

    /// Timers ended without firing and without a cancel: by ``TimerService/shutdown()``, by an
    /// engine failure, a repeating timer whose next deadline is beyond the clock's range, or a
    /// calendar timer whose ``WallClockSchedule`` has no occurrence left (`next(after:)` answered
    /// `nil`) or does not advance (then ``timerScheduleBroke()`` comes first). `count` fewer
    /// pending.
    ///
    /// - Parameter count: How many timers ended, at least 1.
    func timersEnded(_ count: Int)

    /// A calendar timer ended because its ``WallClockSchedule`` answered an occurrence that is
    /// not at least ``TimerService/minimumInterval`` after the instant it was asked about (it
    /// would have fired one occurrence over and over). ``timersEnded(_:)`` follows with a count
    /// of 1, which keeps the pending count. The default implementation records nothing.
    func timerScheduleBroke()
}

extension TimerMetricsRecorder {
    /// Records nothing: recorders written before wake-ups were counted keep compiling.
    public func loopWokeUp() {}

    /// Forwards to ``timerFired(latenessNanoseconds:missed:ended:)`` (the excess is dropped).
    public func timerFired(latenessNanoseconds: Int64, excessLatenessNanoseconds: Int64, missed: UInt64, ended: Bool) {
        self.timerFired(latenessNanoseconds: latenessNanoseconds, missed: missed, ended: ended)
    }

    /// Records nothing (recorders written before broken schedules were counted keep compiling).
    public func timerScheduleBroke() {}

    /// Reports a refused schedule as one ended timer, which keeps the pending count exact.
    public func timerScheduleRefused() {
        self.timersEnded(1)
    }
}
