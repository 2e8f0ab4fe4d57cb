/// What a repeating timer does when it could not fire on time (the loop was busy, the handler
/// ran longer than a period, the machine was loaded).
public enum MissedTickPolicy: Sendable, Hashable {
    /// The default: one call for all the periods that passed, `Tick.missed` counts the skipped
    /// ones, and the grid `start + k·interval` is kept (no drift). This is what Dispatch does.
    case skip
    /// One call per period, back to back, until caught up; then on the original grid.
    case burst
    /// One call, then the grid restarts from the moment of that call (what libevent's
    /// `EV_PERSIST` does). The only policy that accumulates drift.
    case delay
}
