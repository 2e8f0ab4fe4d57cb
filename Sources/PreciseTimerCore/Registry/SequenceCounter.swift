import CPreciseTimerCore
import Synchronization

/// The core's sequence counter (``TimerCore/sequence``), alone on its cache line.
///
/// Every schedule increments it, from whichever thread schedules, so its line moves between the
/// cores of two scheduling threads at each call; a field beside it (the shards, the driver, read
/// by every call) would move with it. Padding of a full line on each side keeps every other field
/// off its line, wherever the object starts (the C limit row of the benchmarks does the same with
/// `alignas(64)`).
///
/// It is one counter, not one per thread, because its numbers are the order of equal deadlines
/// (``FiringOrder``): a timer scheduled after another thread's, which that thread signalled,
/// must draw a larger number, and numbers handed out in per-thread blocks would not be.
package final class SequenceCounter: Sendable {
    private let before: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0)
    private let value = Atomic<UInt64>(0)
    private let after: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0)

    /// Where ``value`` lies in the object: after the 16-byte object header and ``before``
    /// (a test checks it).
    private static var valueOffset: Int { 16 + 7 * 8 }

    package init() {}

    /// The address of the counter (a test reads it; ``prefetchForWrite()`` hints its line).
    package var valueAddress: UnsafeRawPointer {
        UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()) + Self.valueOffset
    }

    /// Starts bringing the counter's line to this core for the ``next()`` a schedule makes a
    /// little later: with two threads scheduling, the line is usually in the other core's cache,
    /// and the transfer then overlaps the schedule's checks and clock read instead of stalling
    /// the increment.
    @inline(__always)
    package func prefetchForWrite() {
        CPreciseTimerCore_prefetchForWrite(self.valueAddress)
    }

    /// The next number: 1 first, never repeated (wrapping only after 2⁶⁴ timers).
    @inline(__always)
    package func next() -> UInt64 {
        self.value.wrappingAdd(1, ordering: .relaxed).newValue
    }
}
