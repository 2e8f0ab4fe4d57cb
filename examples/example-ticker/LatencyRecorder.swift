import PreciseTimer
import Synchronization

/// Collects one ticker's ticks: every lateness sample, in storage reserved up front, and the
/// counters the progress line and the drift need.
///
/// - Important: ``record(_:)`` runs on the timer's thread at every tick, so it never allocates:
///   it appends to an array whose capacity was reserved in `init`, under a lock that only the
///   progress line (a few times a second) and the final summary contend for.
final class LatencyRecorder: Sendable {
    /// What ``record(_:)`` tells the handler.
    enum Outcome {
        /// Keep ticking.
        case recorded
        /// This tick was the last one the run asked for (`--count`): cancel the timer.
        case reachedLimit
        /// The run is over (or the limit was already reached); the tick was not counted.
        case ignored
    }

    /// The counters at one moment, for the progress line.
    struct Progress: Sendable {
        /// Handler calls so far.
        var ticks: Int
        /// Periods skipped so far (`Tick.missed`, summed).
        var missed: UInt64
        /// The latest tick's lateness, in nanoseconds.
        var lastLateness: Int64
        /// The largest lateness so far, in nanoseconds.
        var maxLateness: Int64
    }

    private struct State {
        /// Lateness of each tick in nanoseconds; never grows past its reserved capacity.
        var samples: [Int64] = []
        var progress = Progress(ticks: 0, missed: 0, lastLateness: 0, maxLateness: 0)
        /// When the timer was scheduled: its k-th deadline is `origin + k·interval`.
        var origin: MonotonicInstant?
        var lastFiredAt: MonotonicInstant?
        var isClosed = false
    }

    /// The backend's name, as the table and the JSON show it.
    let name: String
    /// The ticker's period.
    let interval: Duration
    /// Stop after this many ticks, or `nil` to run until ``close()``.
    let limit: Int?
    /// How many lateness samples fit in the storage reserved up front.
    let capacity: Int
    private let state: Mutex<State>

    /// Creates a recorder and reserves its sample storage.
    ///
    /// - Parameters:
    ///   - name: The backend's name.
    ///   - interval: The ticker's period, for the drift.
    ///   - limit: The number of ticks after which ``record(_:)`` says ``Outcome/reachedLimit``.
    ///   - capacity: Samples to reserve room for. Ticks beyond it are still counted (and feed the
    ///     maximum and the drift) but do not enter the percentiles.
    init(name: String, interval: Duration, limit: Int?, capacity: Int) {
        self.name = name
        self.interval = interval
        self.limit = limit
        self.capacity = max(capacity, 1)
        var state = State()
        state.samples.reserveCapacity(self.capacity)
        self.state = Mutex(state)
    }

    /// Sets the grid's origin: the timer's k-th deadline is `origin + k·interval`. The run picks
    /// it and schedules the timer with `startingAt: origin + interval`, so lateness and drift are
    /// measured against the grid the run asked for, never against what the service reports.
    func setOrigin(_ origin: MonotonicInstant) {
        self.state.withLock { $0.origin = origin }
    }

    /// Records one tick. Called by the timer's handler, on the timer's thread.
    func record(_ tick: Tick) -> Outcome {
        self.state.withLock { state in
            if state.isClosed { return .ignored }
            if let limit = self.limit, state.progress.ticks >= limit { return .ignored }
            // This call answers period k = calls so far + every period skipped, this one's included.
            let period = Int64(state.progress.ticks) + Int64(clamping: state.progress.missed + tick.missed) + 1
            let deadline = (state.origin?.nanoseconds ?? 0) &+ period &* self.interval.wholeNanoseconds
            let lateness = tick.firedAt.nanoseconds - deadline
            if state.samples.count < self.capacity {
                state.samples.append(lateness)
            }
            state.progress.ticks += 1
            state.progress.missed += tick.missed
            state.progress.lastLateness = lateness
            state.progress.maxLateness = max(state.progress.maxLateness, lateness)
            state.lastFiredAt = tick.firedAt
            return state.progress.ticks == self.limit ? .reachedLimit : .recorded
        }
    }

    /// The counters right now.
    var progress: Progress {
        self.state.withLock { $0.progress }
    }

    /// Stops recording: ticks that arrive later (a Dispatch handler already queued when the run
    /// ended) are ignored, so the summary describes a fixed set of ticks.
    func close() {
        self.state.withLock { $0.isClosed = true }
    }

    /// Summarises what was recorded: lateness percentiles (nearest rank over the sorted samples),
    /// missed periods, and the drift of the last tick from the grid.
    func summary() -> TickerSummary {
        let (samples, progress, origin, lastFiredAt) = self.state.withLock { state in
            (state.samples, state.progress, state.origin, state.lastFiredAt)
        }
        let sorted = samples.sorted()
        var drift: Int64?
        if let origin, let lastFiredAt {
            // The last call answered period k = calls + skipped periods; on a fixed-rate grid its
            // deadline is origin + k·interval, whatever the service claims in `scheduledAt`.
            let periods = Int64(progress.ticks) + Int64(clamping: progress.missed)
            let (offset, overflow) = self.interval.wholeNanoseconds.multipliedReportingOverflow(by: periods)
            if !overflow {
                drift = lastFiredAt.nanoseconds - (origin.nanoseconds + offset)
            }
        }
        return TickerSummary(
            backend: self.name,
            ticks: progress.ticks,
            missed: progress.missed,
            samples: sorted.count,
            lateness: sorted.isEmpty ? nil : TickerSummary.Lateness(sorted: sorted, max: progress.maxLateness),
            driftNanoseconds: drift
        )
    }
}
