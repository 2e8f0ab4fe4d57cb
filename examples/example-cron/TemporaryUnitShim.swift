// TEMPORARY: a stand-in for `schedule(unit:id:store:_:)` and `listTimers()` (DESIGN.md, Version 4),
// which branch h-units builds. Only OnCalendar= (the first), OnUnitActiveSec= (the first) and
// Persistent= are served. Deleted when h-units is merged.
import PreciseTimer
import PreciseTimerCalendar
import Synchronization

struct TimerListing: Sendable {
    let id: TimerID
    let next: WallClockInstant?, left: Duration?
    let last: WallClockInstant?, passed: Duration?
}

private final class ShimState: Sendable {
    let busy = Mutex(false)
    let last = Mutex<WallClockInstant?>(nil)
}

private let shimLasts = Mutex<[TimerID: ShimState]>([:])

extension PreciseTimer {
    @discardableResult
    func schedule(
        unit: TimerUnit, id: TimerID, store: (any TimerStateStore)? = nil,
        _ handler: @escaping @Sendable (Tick) async -> Void
    ) throws -> TimerHandle {
        let state = ShimState()
        shimLasts.withLock { $0[id] = state }
        let wall: @Sendable () -> WallClockInstant = { self.wallClockNow }
        let run: @Sendable (Tick, WallClockInstant?) -> Void = { tick, occurrence in
            let began = state.busy.withLock { busy in
                defer { busy = true }
                return !busy
            }
            guard began else { return }
            Task {
                defer { state.busy.withLock { $0 = false } }
                if let store, let occurrence {
                    guard (try? await store.claim(occurrence, of: id)) == true else { return }
                }
                state.last.withLock { $0 = wall() }
                await handler(tick)
            }
        }
        if let schedule = unit.onCalendar.first {
            if unit.persistent, let store {
                let now = self.wallClockNow
                Task {
                    guard let last = try? await store.lastTrigger(of: id), var missed = schedule.next(after: last),
                        missed <= now
                    else { return }
                    while let later = schedule.next(after: missed), later <= now { missed = later }
                    let monotonic = MonotonicInstant.now()
                    run(
                        Tick(
                            id: id, count: 0, missed: 0, scheduledAt: monotonic, firedAt: monotonic,
                            wallClockDeadline: missed), missed)
                }
            }
            return try self.scheduleTimer(.on(schedule), id: id) { tick in run(tick, tick.wallClockDeadline) }
        }
        let every = unit.onUnitActive.first ?? .seconds(60)
        return try self.scheduleTimer(.every(every, startingAfter: unit.onActive.first), id: id) { tick in
            run(tick, nil)
        }
    }

    func listTimers() -> [TimerListing] {
        let now = self.wallClockNow
        return self.scheduledIDs.sorted { $0.description < $1.description }.map { id in
            let next = self.wallClockDeadline(of: id)
            let last = shimLasts.withLock { $0[id] }?.last.withLock { $0 }
            return TimerListing(
                id: id, next: next, left: next.map { now.duration(to: $0) }, last: last,
                passed: last.map { $0.duration(to: now) })
        }
    }
}
