import Synchronization

/// The core's sequence counter (``TimerCore/sequence``), alone on its cache line.
///
/// Every schedule increments it, from whichever thread schedules, so its line moves between the
/// cores of two scheduling threads at each call. Stored among the core's other fields, it took
/// with it the line holding the fields every call only reads (the shards, the driver), and each
/// thread then missed on those as well: with two threads, the increment and the read of the
/// driver right before it were a third of a schedule's own samples. Padding of a full line on
/// each side keeps every other field off its line, wherever the object starts (the C limit row
/// of the benchmarks does the same with `alignas(64)`).
final class SequenceCounter: Sendable {
    private let before: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0)
    private let value = Atomic<UInt64>(0)
    private let after: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0)

    init() {}

    /// The next number: 1 first, never repeated (wrapping only after 2⁶⁴ timers).
    @inline(__always)
    func next() -> UInt64 {
        self.value.wrappingAdd(1, ordering: .relaxed).newValue
    }
}
