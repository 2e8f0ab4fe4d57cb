/// A sequence of wall-clock instants a repeating timer fires at: "every day at 03:00 in
/// Europe/Berlin", "Mon..Fri 09:00", "at the top of every hour".
///
/// `CalendarSchedule` (module `PreciseTimerCalendar`) implements systemd's `OnCalendar=` syntax;
/// any type can conform. Give it to ``TimerService/scheduleRepeating(id:on:options:_:)``.
public protocol WallClockSchedule: Sendable {
    /// The first occurrence strictly after `instant`, or `nil` when there is none (the schedule
    /// never fires again). Called on the calling thread when the timer is scheduled, and on the
    /// service's thread at every fire, *with a lock of the service's registry held*: keep it
    /// fast, pure and free of side effects, and never call back into a timer service, block, or
    /// take a lock that code calling the service may hold.
    ///
    /// - Important: This is the one piece of user code the service runs under its lock (a
    ///   schedule's occurrences decide where the timer sits in the heap). A calendar schedule is
    ///   pure arithmetic on the instant, and should stay so.
    func next(after instant: WallClockInstant) -> WallClockInstant?
}
