import CoreMetrics
import Synchronization

/// A swift-metrics backend of plain atomics, standing in for the common ones whose counters and
/// gauges are atomic increments: the metrics section measures what ``SwiftMetricsRecorder`` adds
/// on top of a backend that costs next to nothing, not the backend itself.
final class AtomicMetrics: MetricsFactory {
    /// One counter, meter, recorder or timer: a sum and a count, both atomic.
    final class Handler: CounterHandler, MeterHandler, RecorderHandler, TimerHandler {
        let sum = Atomic<Int64>(0)
        let count = Atomic<Int64>(0)

        func increment(by amount: Int64) { self.sum.add(amount, ordering: .relaxed) }
        func increment(by amount: Double) { self.sum.add(Int64(amount), ordering: .relaxed) }
        func decrement(by amount: Double) { self.sum.subtract(Int64(amount), ordering: .relaxed) }
        func set(_ value: Int64) { self.sum.store(value, ordering: .relaxed) }
        func set(_ value: Double) { self.sum.store(Int64(value), ordering: .relaxed) }
        func record(_ value: Int64) {
            self.sum.add(value, ordering: .relaxed)
            self.count.add(1, ordering: .relaxed)
        }
        func record(_ value: Double) { self.record(Int64(value)) }
        func recordNanoseconds(_ duration: Int64) { self.record(duration) }
        func reset() { self.sum.store(0, ordering: .relaxed) }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { Handler() }
    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler { Handler() }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        Handler()
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { Handler() }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyMeter(_ handler: any MeterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}
