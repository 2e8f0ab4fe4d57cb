/// A sequence of wall-clock instants a repeating timer fires at: "every day at 03:00 in
/// Europe/Berlin", "Mon..Fri 09:00", "at the top of every hour".
///
/// `CalendarSchedule` (module `PreciseTimerCalendar`) implements systemd's `OnCalendar=` syntax;
/// any type can conform. Give it to ``TimerService/scheduleRepeating(id:on:options:_:)``.
public protocol WallClockSchedule: Sendable {
    /// The first occurrence strictly after `instant`, or `nil` when there is none (the schedule
    /// never fires again). Called on the service's thread at every fire, and on the calling
    /// thread when the timer is scheduled: keep it fast and free of side effects.
    func next(after instant: WallClockInstant) -> WallClockInstant?
}
