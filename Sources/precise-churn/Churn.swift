import Dispatch
import PreciseTimer
import Synchronization

/// `precise-churn N`: N schedule/cancel/fire cycles of every kind on one `PreciseTimer`, then shutdown.
///
/// `scripts/check-leaks` runs it under valgrind: every handler, registry entry and libevent event must be freed. It
/// also checks itself: each handler captures a ``Probe`` whose `deinit` is counted, so a handler
/// the service failed to release shows up as a count mismatch, and a batch that does not drain
/// within two minutes fails the run instead of hanging it.
///
/// Cycles run in batches of 1000 scheduled at once, a quarter of each kind:
/// 1. a one-shot that fires (after 0–499 µs);
/// 2. a one-shot cancelled before it fires;
/// 3. a repeating timer (200 µs) cancelled at its third tick, alternately by its own handler and
///    from another thread (a serial queue the handler asks);
/// 4. a weak-target repeating timer whose target is released at its second tick, so that the
///    timer cancels itself at the next one.
///
/// Every timer ends by itself, so the churn thread only waits for the batch's handlers to be
/// released, and the work per cycle stays bounded however slowly the process runs (valgrind).
/// Executors alternate between `.loop` and a concurrent queue.
struct Churn {
    /// A handler's stand-in capture: counts its calls and reports its release.
    private final class Probe: Sendable {
        private let ticks = Atomic<Int>(0)
        private let batch: Batch

        init(batch: Batch) {
            self.batch = batch
            batch.counters.created.add(1, ordering: .relaxed)
            batch.released.enter()
        }

        deinit {
            self.batch.counters.released.add(1, ordering: .relaxed)
            self.batch.released.leave()
        }

        /// Counts a handler call; returns the call's number.
        @discardableResult
        func tick() -> Int {
            self.batch.counters.handlerCalls.add(1, ordering: .relaxed)
            return self.ticks.add(1, ordering: .relaxed).newValue
        }
    }

    /// Holds a weak-target timer's target until the timer's action lets it go.
    private final class TargetHolder: Sendable {
        let target = Mutex<Target?>(Target())
    }

    /// An object for weak-target timers.
    private final class Target: Sendable {}

    /// Totals over the run.
    private final class Counters: Sendable {
        let created = Atomic<Int>(0)
        let released = Atomic<Int>(0)
        let handlerCalls = Atomic<Int>(0)
        let oneShotsFired = Atomic<Int>(0)
        let cancelledBeforeFiring = Atomic<Int>(0)
        let cancelledByHandler = Atomic<Int>(0)
        let cancelledFromOutside = Atomic<Int>(0)
        let weakTargetsReleased = Atomic<Int>(0)
        let unexpectedCalls = Atomic<Int>(0)
    }

    /// One batch's rendezvous points.
    private final class Batch: Sendable {
        let counters: Counters
        /// Entered per probe, left when the probe is released.
        let released = DispatchGroup()

        init(counters: Counters) { self.counters = counters }
    }

    /// A churn run that failed its own checks.
    struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        let description: String
    }

    /// How many cycles to run.
    let cycles: Int
    private let batchSize = 1_000
    private let patience: DispatchTimeInterval = .seconds(120)

    /// Runs the churn.
    /// - Returns: A one-line summary of the counts.
    /// - Throws: ``Failure`` when a handler was not released, a timer outlived its batch, a
    ///   cancelled handler ran, or a batch did not drain; `PreciseTimerError` if scheduling fails.
    func run() throws -> String {
        let timers = try PreciseTimer(configuration: .init(threadName: "churn"))
        let counters = Counters()
        let queue = DispatchQueue(label: "precise-churn", attributes: .concurrent)
        let canceller = DispatchQueue(label: "precise-churn.cancel")
        let startedAt = MonotonicInstant.now()
        var done = 0
        while done < self.cycles {
            let size = min(self.batchSize, self.cycles - done)
            try self.runBatch(
                first: done, size: size, timers: timers, queue: queue, canceller: canceller,
                counters: counters)
            done += size
        }
        timers.shutdown()
        let elapsed = MonotonicInstant.now() - startedAt

        let created = counters.created.load(ordering: .relaxed)
        let released = counters.released.load(ordering: .relaxed)
        guard released == created else {
            throw Failure(description: "churn: \(created - released) of \(created) handlers never released")
        }
        let unexpected = counters.unexpectedCalls.load(ordering: .relaxed)
        guard unexpected == 0 else {
            throw Failure(description: "churn: \(unexpected) handler calls after cancel or after the target died")
        }
        let milliseconds = elapsed.components.seconds * 1_000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        return "churn: \(self.cycles) cycles in \(milliseconds) ms: "
            + "\(counters.oneShotsFired.load(ordering: .relaxed)) one-shots fired, "
            + "\(counters.cancelledBeforeFiring.load(ordering: .relaxed)) cancelled before firing, "
            + "\(counters.cancelledByHandler.load(ordering: .relaxed)) + "
            + "\(counters.cancelledFromOutside.load(ordering: .relaxed)) repeating cancelled by handler + from outside, "
            + "\(counters.weakTargetsReleased.load(ordering: .relaxed)) weak-target timers ended after their target; "
            + "\(counters.handlerCalls.load(ordering: .relaxed)) handler calls, "
            + "\(released)/\(created) handlers released, \(timers.scheduledCount) timers left"
    }

    private func runBatch(
        first: Int, size: Int, timers: PreciseTimer, queue: DispatchQueue,
        canceller: DispatchQueue, counters: Counters
    ) throws {
        let batch = Batch(counters: counters)
        for index in first..<(first + size) {
            let options = TimerOptions(executor: (index / 4) % 2 == 0 ? .loop : .queue(queue))
            let probe = Probe(batch: batch)
            switch index % 4 {
            case 0:
                try timers.schedule(after: .microseconds(index % 500), options: options) { _ in
                    probe.tick()
                    counters.oneShotsFired.add(1, ordering: .relaxed)
                }
            case 1:
                let id = try timers.schedule(after: .seconds(3_600), options: options) { _ in
                    probe.tick()
                    counters.unexpectedCalls.add(1, ordering: .relaxed)
                }
                if timers.cancel(id) { counters.cancelledBeforeFiring.add(1, ordering: .relaxed) }
            case 2 where (index / 4) % 2 == 0:
                try timers.scheduleRepeating(every: .microseconds(200), options: options) { [weak timers] tick in
                    let count = probe.tick()
                    if count == 3, timers?.cancel(tick.id) == true {
                        counters.cancelledByHandler.add(1, ordering: .relaxed)
                    } else if count > 3 {
                        counters.unexpectedCalls.add(1, ordering: .relaxed)  // Ran after cancelling itself.
                    }
                }
            case 2:
                try timers.scheduleRepeating(every: .microseconds(200), options: options) { [weak timers] tick in
                    guard probe.tick() == 3 else { return }
                    canceller.async { [weak timers] in
                        if timers?.cancel(tick.id) == true { counters.cancelledFromOutside.add(1, ordering: .relaxed) }
                    }
                }
            default:
                let holder = TargetHolder()
                guard let target = holder.target.withLock({ $0 }) else { continue }
                try timers.scheduleRepeating(every: .microseconds(200), options: options, target: target) {
                    _, _ in
                    if probe.tick() == 2 {
                        holder.target.withLock { $0 = nil }  // The last strong reference but the action's own.
                        counters.weakTargetsReleased.add(1, ordering: .relaxed)
                    }
                }
            }
        }
        guard batch.released.wait(timeout: .now() + self.patience) == .success else {
            throw Failure(description: "churn: handlers of the batch at cycle \(first) not released within 120 s")
        }
        let left = timers.scheduledCount
        guard left == 0 else {
            throw Failure(description: "churn: \(left) timers still scheduled after their handlers were released")
        }
    }
}
