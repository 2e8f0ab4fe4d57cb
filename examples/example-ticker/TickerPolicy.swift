import ArgumentParser
import PreciseTimer

/// What the ticker does about periods that pass while it is late (`--policy`).
enum TickerPolicy: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// One call, `Tick.missed` counts the skipped periods, phase kept.
    case skip
    /// One call per missed period, back to back, then continue on the original grid.
    case burst
    /// One call, then restart the grid from now: phase is lost, and the drift shows it.
    case delay

    /// The library's policy.
    var missedTicks: MissedTickPolicy {
        switch self {
        case .skip: .skip
        case .burst: .burst
        case .delay: .delay
        }
    }
}
