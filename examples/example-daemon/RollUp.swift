import PreciseTimer
import PreciseTimerCalendar
import Synchronization

/// A calendar job beside the sessions: at every occurrence of its `OnCalendar=` schedule
/// (`minutely` by default) it rolls the session counters up into one line, as a daemon rolls
/// its stats up into a report at the top of every minute, hour or night.
///
/// The timer is on the wall clock: it fires at 12:34:00 as the wall clock reads it, follows NTP
/// steps, and after a suspend makes one call for the latest missed occurrence (the default
/// `.skip`), with `missed` counting the rest.
final class RollUp: Sendable {
    let schedule: CalendarSchedule
    private let store: SessionStore
    /// The counters at the previous roll-up.
    private let last = Mutex((touches: 0, expiries: 0))

    init(schedule: CalendarSchedule, store: SessionStore) {
        self.schedule = schedule
        self.store = store
    }

    /// Starts the job on `lane`.
    func start(on lane: PreciseTimer) throws {
        try lane.scheduleRepeating(id: "rollup", on: self.schedule) { [weak self] tick in
            self?.roll(tick)
        }
    }

    private func roll(_ tick: Tick) {
        let touches = self.store.touchCount
        let expiries = self.store.expiryCount
        let (deltaTouches, deltaExpiries) = self.last.withLock { last in
            defer { last = (touches, expiries) }
            return (touches - last.touches, expiries - last.expiries)
        }
        let occurrence = tick.wallClockDeadline.map { "\($0)" } ?? "?"
        print(
            "rollup: \(occurrence) (\(self.schedule)) touches=\(deltaTouches) expiries=\(deltaExpiries)"
                + " late=\(Format.short(tick.lateness)) missed=\(tick.missed)")
    }
}
