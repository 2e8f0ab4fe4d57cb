import CoreMetrics
import Dispatch
import Glibc
import MetricsTestKit
import PreciseTimer
import PreciseTimerMetrics
import PreciseTimerTesting
import Testing

/// ``SwiftMetricsRecorder`` against MetricsTestKit's `TestMetrics`: exact counts after known
/// workloads, on virtual time and on the libevent engine.
@Suite("Metrics")
struct SwiftMetricsRecorderTests {
    /// The recorder's metrics as the test factory holds them.
    private struct Readings {
        let metrics: TestMetrics
        let labels: SwiftMetricsRecorder.Labels
        let dimensions: [(String, String)]

        func counter(_ label: String) throws -> Int64 {
            try self.metrics.expectCounter(label, self.dimensions).totalValue
        }
        var scheduled: Int64 { get throws { try self.counter(self.labels.scheduled) } }
        var fired: Int64 { get throws { try self.counter(self.labels.fired) } }
        var cancelled: Int64 { get throws { try self.counter(self.labels.cancelled) } }
        var missedTicks: Int64 { get throws { try self.counter(self.labels.missedTicks) } }
        var pending: Double? {
            get throws { try self.metrics.expectMeter(self.labels.pending, self.dimensions).lastValue }
        }
        var lateness: [Int64] {
            get throws { try self.metrics.expectTimer(self.labels.lateness, self.dimensions).values }
        }
        var excessLateness: [Int64] {
            get throws { try self.metrics.expectTimer(self.labels.excessLateness, self.dimensions).values }
        }
    }

    private static func recorder(
        prefix: String = "precise_timer", dimensions: [(String, String)] = []
    ) -> (SwiftMetricsRecorder, Readings) {
        let metrics = TestMetrics()
        let recorder = SwiftMetricsRecorder(factory: metrics, labelPrefix: prefix, dimensions: dimensions)
        return (recorder, Readings(metrics: metrics, labels: recorder.labels, dimensions: dimensions))
    }

    @Test("labels follow the Prometheus conventions under one prefix, with the lateness timer in microseconds")
    func labels() throws {
        let (recorder, readings) = Self.recorder(prefix: "sessions_timer", dimensions: [("lane", "bulk")])
        #expect(recorder.labels.scheduled == "sessions_timer_scheduled_total")
        #expect(recorder.labels.fired == "sessions_timer_fired_total")
        #expect(recorder.labels.cancelled == "sessions_timer_cancelled_total")
        #expect(recorder.labels.missedTicks == "sessions_timer_missed_ticks_total")
        #expect(recorder.labels.pending == "sessions_timer_pending")
        #expect(recorder.labels.lateness == "sessions_timer_lateness_seconds")
        #expect(recorder.labels.wakeUps == "sessions_timer_wakeups_total")
        #expect(recorder.labels.brokenSchedules == "sessions_timer_broken_schedules_total")
        #expect(readings.metrics.counters.count == 6)
        #expect(readings.metrics.meters.count == 1)
        #expect(recorder.labels.excessLateness == "sessions_timer_excess_lateness_seconds")
        #expect(readings.metrics.timers.count == 2)
        let lateness = try readings.metrics.expectTimer(recorder.labels.lateness, [("lane", "bulk")])
        #expect(lateness.displayUnit == .microseconds)
        #expect(readings.metrics.counters.allSatisfy { $0.dimensions.map(\.0) == ["lane"] })
        recorder.destroy()
        #expect(readings.metrics.counters.isEmpty && readings.metrics.meters.isEmpty && readings.metrics.timers.isEmpty)
    }

    @Test("a calendar timer whose schedule stops advancing is counted as broken and no longer pending")
    func brokenSchedule() throws {
        let (recorder, readings) = Self.recorder()
        let service = TestTimerService(
            instruments: TimerInstruments(logger: TimerInstruments.silentLogger, metrics: recorder, stallThreshold: nil)
        )
        defer { service.shutdown() }
        let first = service.wallClockNow.advanced(by: .seconds(1))
        try service.scheduleRepeating(id: "stuck", on: StuckSchedule(first: first)) { _ in }
        #expect(try readings.pending == 1)
        try service.advance(by: .seconds(5))
        #expect(try readings.fired == 1)
        #expect(try readings.counter(readings.labels.brokenSchedules) == 1)
        #expect(try readings.pending == 0)
    }

    /// Answers `first`, then the instant it is asked about: a schedule that does not advance.
    private struct StuckSchedule: WallClockSchedule {
        let first: WallClockInstant

        func next(after instant: WallClockInstant) -> WallClockInstant? {
            instant < self.first ? self.first : instant
        }
    }

    @Test("virtual time: 10 one-shots, 3 cancelled, 7 fired, a stalled ticker: exact counts, gauge and lateness")
    func exactCountsOnVirtualTime() throws {
        let (recorder, readings) = Self.recorder()
        let service = TestTimerService(
            instruments: TimerInstruments(logger: TimerInstruments.silentLogger, metrics: recorder, stallThreshold: nil)
        )

        for index in 1...10 {
            try service.schedule(id: TimerID("one-\(index)"), after: .milliseconds(index)) { _ in }
        }
        #expect(try readings.scheduled == 10)
        #expect(try readings.pending == 10)
        for index in [2, 5, 9] { #expect(service.cancel(TimerID("one-\(index)"))) }
        #expect(!service.cancel("one-5"))  // Already gone: counted once.
        #expect(try readings.cancelled == 3)
        #expect(try readings.pending == 7)
        try service.advance(by: .milliseconds(10))
        #expect(try readings.fired == 7)
        #expect(try readings.pending == 0)
        #expect(try readings.counter(readings.labels.wakeUps) == 7, "seven deadlines, seven wake-ups")
        #expect(try readings.lateness == Array(repeating: 0, count: 7))

        // A 10 ms ticker: on time once, then the loop stalls 35 ms: one call, 2 periods missed, 5 ms late.
        try service.scheduleRepeating(id: "ticker", every: .milliseconds(10)) { _ in }
        try service.advance(by: .milliseconds(10))
        service.moveClock(to: service.now.advanced(by: .milliseconds(35)))
        try service.advance(by: .zero)
        #expect(try readings.scheduled == 11)
        #expect(try readings.fired == 9)
        #expect(try readings.missedTicks == 2)
        #expect(try readings.lateness.suffix(2) == [0, 5_000_000])
        #expect(try readings.excessLateness.suffix(2) == [0, 5_000_000], "a precise timer: all of it is excess")
        #expect(try readings.pending == 1)

        // A schedule the registry refuses (a duplicate ID) was counted as it reached the registry
        // and is taken back from pending; cancelAll counts what it cancelled; shutdown ends the
        // rest without counting them as cancelled.
        #expect(throws: PreciseTimerError.self) { try service.schedule(id: "ticker", after: .zero) { _ in } }
        #expect(try readings.scheduled == 12)
        #expect(try readings.pending == 1)
        service.cancelAll()
        #expect(try readings.cancelled == 4)
        #expect(try readings.pending == 0)
        try service.schedule(id: "left", after: .seconds(1)) { _ in }
        try service.scheduleRepeating(id: "left-too", every: .seconds(1)) { _ in }
        #expect(try readings.pending == 2)
        service.shutdown()
        #expect(try readings.pending == 0)
        #expect(try readings.cancelled == 4)
        #expect(try readings.scheduled == 14)
        #expect(try readings.lateness.count == 9)
    }

    @Test("the libevent engine: the same workload counts exactly, the ticker's misses as its ticks saw them")
    func exactCountsOnTheEngine() async throws {
        let (recorder, readings) = Self.recorder()
        let timers = try PreciseTimer(configuration: .init(metrics: recorder))
        defer { timers.shutdown() }

        let fired = Recorder<TimerID>()
        let cancelled = [2, 5, 9]
        for index in 1...10 {
            // The three to cancel are an hour away: a task that loses its core for a while still
            // finds them pending.
            let delay: Duration = cancelled.contains(index) ? .seconds(3_600) : .milliseconds(200 + 5 * index)
            try timers.schedule(id: TimerID("one-\(index)"), after: delay) { tick in
                fired.append(tick.id)
            }
        }
        for index in cancelled { #expect(timers.cancel(TimerID("one-\(index)"))) }
        await fired.wait(forCount: 7)

        // A 2 ms ticker whose first call blocks the loop for 15 ms: its second call has missed periods.
        let ticks = Recorder<Tick>()
        try timers.scheduleRepeating(id: "ticker", every: .milliseconds(2)) { tick in
            ticks.append(tick)
            if tick.count == 1 { usleep(15_000) }
        }
        await ticks.wait(forCount: 3)
        #expect(timers.cancel("ticker"))
        // A barrier on the loop: once it runs, no ticker call is still in flight.
        let barrier = Recorder<Bool>()
        try timers.schedule(after: .zero) { _ in barrier.append(true) }
        await barrier.wait(forCount: 1)

        let tickerCalls = Int64(ticks.count)
        let missed = ticks.values.reduce(0) { $0 + $1.missed }
        #expect(missed > 0)
        #expect(fired.count == 7)
        #expect(try readings.scheduled == 12)
        #expect(try readings.cancelled == 4)
        #expect(try readings.fired == 7 + tickerCalls + 1)
        #expect(try readings.missedTicks == Int64(missed))
        #expect(try readings.pending == 0)
        let lateness = try readings.lateness
        #expect(Int64(lateness.count) == 7 + tickerCalls + 1)
        #expect(lateness.allSatisfy { $0 >= 0 })

        try timers.schedule(id: "pending", after: .seconds(3_600)) { _ in }
        #expect(try readings.pending == 1)
        timers.shutdown()
        #expect(try readings.pending == 0)
        #expect(try readings.cancelled == 4)
    }

    @Test("metrics are off by default, and a service without them schedules and fires as usual")
    func offByDefault() async throws {
        #expect(PreciseTimer.Configuration().metrics == nil)
        let timers = try PreciseTimer()
        defer { timers.shutdown() }
        let fired = Recorder<Bool>()
        try timers.schedule(after: .milliseconds(1)) { _ in fired.append(true) }
        await fired.wait(forCount: 1)
    }
}
