import CoreMetrics
import PreciseTimer

/// A ``TimerMetricsRecorder`` on swift-metrics: counters of timers scheduled, fired and
/// cancelled and of missed ticks, a meter (gauge) of pending timers, and a timer of lateness.
///
/// ```swift
/// let metrics = SwiftMetricsRecorder()  // MetricsSystem.factory, as bootstrapped by the daemon
/// let timers = try PreciseTimer(configuration: .init(metrics: metrics))
/// ```
///
/// The metrics are created once, here, with the given dimensions and never a timer's ID (IDs
/// are unbounded; a dimension per ID would grow the backend without end). Their labels follow
/// the Prometheus conventions, under one prefix (`precise_timer` by default):
///
/// | Label | Kind | What |
/// | --- | --- | --- |
/// | `precise_timer_scheduled_total` | `Counter` | Timers that reached the registry (every valid `schedule…`; a duplicate ID refused there included) |
/// | `precise_timer_fired_total` | `Counter` | Handler calls begun |
/// | `precise_timer_cancelled_total` | `Counter` | Timers cancelled (`cancel`, `cancelAll`, tokens, tick sequences) |
/// | `precise_timer_missed_ticks_total` | `Counter` | Periods skipped (the sum of ``Tick/missed``) |
/// | `precise_timer_pending` | `Meter` | Timers scheduled and not yet ended (paused ones included) |
/// | `precise_timer_wakeups_total` | `Counter` | Loop passes that ran timers (tolerant timers share them) |
/// | `precise_timer_broken_schedules_total` | `Counter` | Calendar timers ended because their schedule did not advance |
/// | `precise_timer_lateness_seconds` | `CoreMetrics.Timer` | Each call's ``Tick/lateness`` |
/// | `precise_timer_excess_lateness_seconds` | `CoreMetrics.Timer` | Each call's ``Tick/excessLateness``: lateness beyond the timer's tolerance, the figure to alert on |
///
/// The lateness timer records nanoseconds, as every swift-metrics `Timer` does, and prefers
/// microseconds for display; its label ends in `_seconds` because Prometheus exports a timer as
/// a histogram in seconds. That histogram's default buckets (swift-prometheus) start at 5 ms,
/// far above a healthy lateness (tens of microseconds): give it its own, for example
/// `factory.durationHistogramBuckets["precise_timer_lateness_seconds"] = [.microseconds(10),
/// .microseconds(50), .microseconds(100), .microseconds(500), .milliseconds(1), .milliseconds(5),
/// .milliseconds(25)]`.
///
/// Shutdown ends the pending timers (the gauge goes to 0) without counting them as cancelled.
/// Each event costs one or two metric updates, whatever the backend's handlers cost (atomic
/// increments in the common ones); the recorder itself takes no lock.
public final class SwiftMetricsRecorder: TimerMetricsRecorder {
    /// The labels of the recorder's metrics: the prefix followed by a fixed suffix.
    public struct Labels: Sendable, Hashable {
        /// `<prefix>_scheduled_total`.
        public let scheduled: String
        /// `<prefix>_fired_total`.
        public let fired: String
        /// `<prefix>_cancelled_total`.
        public let cancelled: String
        /// `<prefix>_missed_ticks_total`.
        public let missedTicks: String
        /// `<prefix>_pending`.
        public let pending: String
        /// `<prefix>_wakeups_total`.
        public let wakeUps: String
        /// `<prefix>_lateness_seconds`.
        public let lateness: String
        /// `<prefix>_broken_schedules_total`.
        public let brokenSchedules: String
        /// `<prefix>_excess_lateness_seconds`.
        public let excessLateness: String

        /// The labels under `prefix`.
        ///
        /// - Parameter prefix: The label prefix, e.g. `precise_timer`.
        public init(prefix: String) {
            self.scheduled = prefix + "_scheduled_total"
            self.fired = prefix + "_fired_total"
            self.cancelled = prefix + "_cancelled_total"
            self.missedTicks = prefix + "_missed_ticks_total"
            self.pending = prefix + "_pending"
            self.wakeUps = prefix + "_wakeups_total"
            self.lateness = prefix + "_lateness_seconds"
            self.brokenSchedules = prefix + "_broken_schedules_total"
            self.excessLateness = prefix + "_excess_lateness_seconds"
        }
    }

    /// The labels this recorder's metrics were created with.
    public let labels: Labels

    private let scheduled: Counter
    private let fired: Counter
    private let cancelled: Counter
    private let missedTicks: Counter
    private let pending: Meter
    private let wakeUps: Counter
    private let lateness: CoreMetrics.Timer
    private let brokenSchedules: Counter
    private let excessLateness: CoreMetrics.Timer

    /// Creates the metrics, once, on `factory`.
    ///
    /// - Parameters:
    ///   - factory: The metrics backend. By default `MetricsSystem.factory`, which the daemon
    ///     bootstraps (a library never does).
    ///   - labelPrefix: The prefix of every label; by default `precise_timer`. Give each service
    ///     its own prefix or dimensions when a process runs several.
    ///   - dimensions: Fixed dimensions added to every metric, e.g. `[("service", "sessions")]`.
    public init(
        factory: any MetricsFactory = MetricsSystem.factory, labelPrefix: String = "precise_timer",
        dimensions: [(String, String)] = []
    ) {
        let labels = Labels(prefix: labelPrefix)
        self.labels = labels
        self.scheduled = Counter(label: labels.scheduled, dimensions: dimensions, factory: factory)
        self.fired = Counter(label: labels.fired, dimensions: dimensions, factory: factory)
        self.cancelled = Counter(label: labels.cancelled, dimensions: dimensions, factory: factory)
        self.missedTicks = Counter(label: labels.missedTicks, dimensions: dimensions, factory: factory)
        self.pending = Meter(label: labels.pending, dimensions: dimensions, factory: factory)
        self.wakeUps = Counter(label: labels.wakeUps, dimensions: dimensions, factory: factory)
        self.brokenSchedules = Counter(label: labels.brokenSchedules, dimensions: dimensions, factory: factory)
        self.excessLateness = CoreMetrics.Timer(
            label: labels.excessLateness, dimensions: dimensions, preferredDisplayUnit: .microseconds, factory: factory)
        self.lateness = CoreMetrics.Timer(
            label: labels.lateness, dimensions: dimensions, preferredDisplayUnit: .microseconds, factory: factory)
    }

    /// Tells the backend that the metrics will not be updated again (it may free them). Call it
    /// once the service has shut down; the recorder must not be used afterwards.
    public func destroy() {
        self.scheduled.destroy()
        self.fired.destroy()
        self.cancelled.destroy()
        self.missedTicks.destroy()
        self.pending.destroy()
        self.wakeUps.destroy()
        self.lateness.destroy()
        self.brokenSchedules.destroy()
        self.excessLateness.destroy()
    }

    // MARK: TimerMetricsRecorder

    /// Counts a scheduled timer and one more pending. See ``TimerMetricsRecorder/timerScheduled()``.
    public func timerScheduled() {
        self.scheduled.increment()
        self.pending.increment()
    }

    /// Counts a fire, records its lateness (all of it as excess: this form knows no tolerance),
    /// adds its missed periods, and for a one-shot one fewer pending. See
    /// ``TimerMetricsRecorder/timerFired(latenessNanoseconds:missed:ended:)``; the services call
    /// ``timerFired(latenessNanoseconds:excessLatenessNanoseconds:missed:ended:)``.
    ///
    /// - Parameters:
    ///   - latenessNanoseconds: The tick's lateness in nanoseconds.
    ///   - missed: Periods skipped just before this call.
    ///   - ended: Whether the timer ended with this call.
    public func timerFired(latenessNanoseconds: Int64, missed: UInt64, ended: Bool) {
        self.timerFired(
            latenessNanoseconds: latenessNanoseconds, excessLatenessNanoseconds: latenessNanoseconds, missed: missed,
            ended: ended)
    }

    /// Counts a call, records its lateness and its lateness beyond tolerance, adds its missed
    /// periods, and one fewer pending when it ended a one-shot. See
    /// ``TimerMetricsRecorder/timerFired(latenessNanoseconds:excessLatenessNanoseconds:missed:ended:)``.
    public func timerFired(latenessNanoseconds: Int64, excessLatenessNanoseconds: Int64, missed: UInt64, ended: Bool) {
        self.fired.increment()
        self.lateness.recordNanoseconds(latenessNanoseconds)
        self.excessLateness.recordNanoseconds(excessLatenessNanoseconds)
        if missed > 0 { self.missedTicks.increment(by: missed) }
        if ended { self.pending.decrement() }
    }

    /// Counts cancelled timers, that many fewer pending. See ``TimerMetricsRecorder/timersCancelled(_:)``.
    ///
    /// - Parameter count: How many timers were cancelled.
    public func timersCancelled(_ count: Int) {
        self.cancelled.increment(by: count)
        self.pending.decrement(by: Double(count))
    }

    /// That many fewer pending (shutdown, failure, a deadline beyond the clock's range, a calendar
    /// schedule that ran out or does not advance). See ``TimerMetricsRecorder/timersEnded(_:)``.
    ///
    /// - Parameter count: How many timers ended.
    public func timersEnded(_ count: Int) {
        self.pending.decrement(by: Double(count))
    }

    /// Counts a wake-up of the loop. See ``TimerMetricsRecorder/loopWokeUp()``.
    public func loopWokeUp() {
        self.wakeUps.increment()
    }

    /// Counts a calendar timer ended by a schedule that did not advance. See
    /// ``TimerMetricsRecorder/timerScheduleBroke()``.
    public func timerScheduleBroke() {
        self.brokenSchedules.increment()
    }

    /// A schedule the registry refused after ``timerScheduled()`` (a duplicate ID, or a shutdown
    /// in between): the pending timer is taken back. (`_scheduled_total`, a counter, keeps it:
    /// it counts the schedules that reached the registry.)
    public func timerScheduleRefused() {
        self.pending.decrement()
    }
}
