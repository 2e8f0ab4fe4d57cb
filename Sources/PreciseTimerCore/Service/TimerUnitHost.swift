import Logging

/// A service that keeps the state of the systemd-style units scheduled on it (module
/// `PreciseTimerCalendar`'s `schedule(unit:id:store:_:)`), so that `listTimers()` can read a unit's
/// last run and next elapse. The services of this package conform through ``TimerCoreService``;
/// a conformer of your own does not, and its units are then listed as plain timers.
///
/// The state lives with the service it runs on (no process-wide table keyed by object identity),
/// and the service holds it weakly: a unit's state is owned by its timer's handler, so it goes
/// when the timer ends (cancel, `cancelAll`, `shutdown`) and its running handler has returned.
package protocol TimerUnitHost: TimerService {
    /// The units scheduled on this service, and when the service started (`OnStartupSec=`).
    var units: TimerUnitTable { get }

    /// Whether `handle` still names the timer scheduled under its ID.
    func isCurrent(_ handle: TimerHandle) -> Bool

    /// Moves the timer `handle` names to `deadline`, never a newer timer that took its ID after
    /// a cancel (a unit moves its carrier after every run); returns whether it still exists.
    func reschedule(_ handle: TimerHandle, at deadline: MonotonicInstant) -> Bool

    /// Pauses the timer `handle` names, never a newer timer under its ID; returns whether it
    /// still exists.
    func pause(_ handle: TimerHandle) -> Bool

    /// Logs a unit's event (an elapse dropped, a store that failed) with the service's logger.
    func logUnitEvent(_ message: String, id: TimerID, detail: String)

    /// An alarm that wakes the machine from suspend, for a unit with `WakeSystem=`.
    ///
    /// - Throws: ``PreciseTimerError/Code/systemFailure`` when the system refuses the alarm clock
    ///   (`EPERM` without `CAP_WAKE_ALARM`), ``PreciseTimerError/Code/invalidConfiguration`` when
    ///   the service has none (the default).
    func makeWakeAlarm(for id: TimerID) throws(PreciseTimerError) -> any TimerWakeAlarm
}

extension TimerCoreService {
    /// Whether `handle` names the timer now scheduled under its ID.
    package func isCurrent(_ handle: TimerHandle) -> Bool {
        guard !self.core.isInherited else { return false }
        return self.core.generation(of: handle.id) == handle.generation
    }

    /// Moves the timer `handle` names, checked by generation under the shard's lock.
    package func reschedule(_ handle: TimerHandle, at deadline: MonotonicInstant) -> Bool {
        guard !self.core.isInherited else { return false }
        return (try? self.core.reschedule(handle, at: deadline)) ?? false
    }

    /// Pauses the timer `handle` names, checked by generation under the shard's lock.
    package func pause(_ handle: TimerHandle) -> Bool {
        guard !self.core.isInherited else { return false }
        return self.core.pause(handle)
    }

    /// No alarm clock by default: ``PreciseTimerError/Code/invalidConfiguration``. `PreciseTimer`
    /// has one (a `CLOCK_BOOTTIME_ALARM` timerfd), `TestTimerService` a virtual one.
    package func makeWakeAlarm(for id: TimerID) throws(PreciseTimerError) -> any TimerWakeAlarm {
        throw PreciseTimerError(
            .invalidConfiguration, id: id, value: "WakeSystem=yes",
            detail: "\(Self.self) has no alarm clock to wake the machine with; PreciseTimer has one")
    }

    /// Logs a unit's event at warning level with the service's logger.
    package func logUnitEvent(_ message: String, id: TimerID, detail: String) {
        self.core.instruments.logger.warning(
            "\(message)", metadata: ["timer.id": "\(id)", "detail": "\(detail)"])
    }
}
