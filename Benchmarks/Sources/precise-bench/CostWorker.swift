import Synchronization

/// One caller thread of the schedule + cancel benchmark: the pending timers it will cancel, in
/// order.
///
/// The victims are distinct slots, so each is still the timer the fill scheduled when its turn
/// comes: their handles are gathered into one array before timing, and the timed loop reads it
/// front to back. A random order therefore costs the service its cache misses, not the benchmark.
final class CostWorker<Service: ScaleService>: Sendable {
    private let victims: [Service.Handle]
    private let wallNanoseconds = Atomic<Int64>(0)
    private let failures = Atomic<Int>(0)

    /// Creates a worker that will cancel `victims`, in order.
    init(victims: [Service.Handle]) {
        self.victims = victims
    }

    /// The timed loop: for each victim, schedule a new far-away timer, then cancel the victim
    /// (so the pending count stays constant).
    func run(on timers: Service) {
        var failures = 0
        let start = Measure.now()
        for victim in self.victims {
            if (try? timers.oneShot(after: .seconds(3_600), {})) == nil { failures += 1 }
            if !timers.cancel(victim) { failures += 1 }
        }
        self.wallNanoseconds.store(Measure.now() - start, ordering: .relaxed)
        self.failures.store(failures, ordering: .relaxed)
    }

    /// The timed loop's duration on this thread, in nanoseconds.
    var wall: Int64 { self.wallNanoseconds.load(ordering: .relaxed) }

    /// Schedules that threw or cancels that found nothing (expected: 0).
    var failureCount: Int { self.failures.load(ordering: .relaxed) }
}
