import Dispatch
import Glibc
import PreciseTimer
import PreciseTimerTesting
import Synchronization

/// Threads scheduling, rescheduling and cancelling at once while timers fire, then an account
/// of every timer: no one-shot fired twice or both fired and cancelled, no handler overlapped
/// itself, every handler released, and every timer no `cancelAll` could have swept ended by its
/// own fire or by a `cancel` that returned `true`.
struct MixedRun {
    let threads: Int
    let operations: Int

    struct Result {
        let summary: String
        let violations: [String]
    }

    /// A scheduled timer as its worker remembers it (generated IDs are never reused, so a
    /// `cancel` or `reschedule` by ID can only reach this very timer).
    private struct Scheduled {
        let id: TimerID
        let record: StressRecord
    }

    func run(on timers: any TimerService) throws -> Result {
        let sequence = Atomic<Int>(0)
        let lastCancelAll = Atomic<Int>(-1)
        let cancelAlls = Atomic<Int>(0)
        let moves = Atomic<Int>(0)
        let all = Mutex<[StressRecord]>([])
        let errors = Mutex<[String]>([])
        let queue = DispatchQueue(label: "precise-stress.handlers", attributes: .concurrent)
        let (threads, operations) = (self.threads, self.operations)
        let start = MonotonicInstant.now()

        runOnThreads(threads) { worker in
            var random = SplitMix(seed: UInt64(worker) &+ 1)
            var mine: [Scheduled] = []
            for index in 0..<operations {
                let roll = random.next() % 10_000
                let options: TimerOptions = random.next() % 2 == 0 ? .init() : .init(executor: .queue(queue))
                do {
                    switch roll {
                    case 0..<4_000:  // A one-shot due within 2 ms.
                        let record = StressRecord(
                            repeating: false, scheduledAt: sequence.add(1, ordering: .sequentiallyConsistent).newValue)
                        let probe = ReleaseProbe(record)
                        let delay = Duration.microseconds(Int64(random.next() % 2_000))
                        let id = try timers.schedule(id: nil, after: delay, options: options) { _ in
                            probe.record.call {}
                        }
                        mine.append(Scheduled(id: id, record: record))
                    case 4_000..<5_000:  // Repeating every 0.2–1 ms; cancels itself after 1–4 calls.
                        let record = StressRecord(
                            repeating: true, scheduledAt: sequence.add(1, ordering: .sequentiallyConsistent).newValue)
                        let probe = ReleaseProbe(record)
                        let stopAfter = 1 + random.next() % 4
                        let interval = Duration.microseconds(Int64(200 + random.next() % 800))
                        let id = try timers.scheduleRepeating(
                            id: nil, every: interval, startingAfter: nil, options: options
                        ) {
                            tick in
                            probe.record.call {
                                if tick.count >= stopAfter, timers.cancel(tick.handle) {
                                    probe.record.cancelsReturningTrue.add(1, ordering: .sequentiallyConsistent)
                                }
                            }
                        }
                        mine.append(Scheduled(id: id, record: record))
                    case 5_000..<7_500:  // Cancel one of ours, maybe long gone.
                        if let victim = mine.randomElement(using: &random), timers.cancel(victim.id) {
                            victim.record.cancelsReturningTrue.add(1, ordering: .sequentiallyConsistent)
                        }
                    case 7_500..<9_998:  // Push one of ours back by up to 2 ms.
                        if let target = mine.randomElement(using: &random),
                            try timers.reschedule(target.id, after: .microseconds(Int64(random.next() % 2_000)))
                        {
                            moves.add(1, ordering: .relaxed)
                        }
                    default:  // Rarely, and only in the first half: sweep everything.
                        guard index < operations / 2, random.next() % 8 == 0 else { break }
                        timers.cancelAll()
                        lastCancelAll.max(
                            sequence.add(1, ordering: .sequentiallyConsistent).newValue,
                            ordering: .sequentiallyConsistent)
                        cancelAlls.add(1, ordering: .relaxed)
                    }
                } catch {
                    errors.withLock { $0.append("worker \(worker): \(error)") }
                }
            }
            all.withLock { $0 += mine.map(\.record) }
        }
        let workersDone = MonotonicInstant.now()

        // Every timer ends by itself within a few milliseconds; bounded, so a lost timer fails.
        var pending = timers.scheduledCount
        let draining = MonotonicInstant.now()
        while pending > 0, MonotonicInstant.now() - draining < .seconds(30) {
            usleep(1_000)
            pending = timers.scheduledCount
        }
        timers.shutdown()
        queue.sync(flags: .barrier) {}
        let records = all.withLock { $0 }
        let releasing = MonotonicInstant.now()
        while !records.allSatisfy({ $0.released.load(ordering: .sequentiallyConsistent) }),
            MonotonicInstant.now() - releasing < .seconds(10)
        {
            usleep(1_000)
        }

        var violations = errors.withLock { $0 }
        if pending > 0 { violations.append("\(pending) timers still scheduled 30 s after the workers stopped") }
        let sweptBefore = lastCancelAll.load(ordering: .sequentiallyConsistent)
        var oneShotCalls = 0
        var repeatingCalls = 0
        var cancelled = 0
        for (index, record) in records.enumerated() {
            if let problem = record.problem(strict: record.scheduledAt > sweptBefore) {
                violations.append("timer \(index) (\(record.repeating ? "repeating" : "one-shot")): \(problem)")
            }
            let calls = record.calls.load(ordering: .relaxed)
            if record.repeating { repeatingCalls += calls } else { oneShotCalls += calls }
            cancelled += record.cancelsReturningTrue.load(ordering: .relaxed)
        }
        // Every timer ended by its fire (one-shots), a `cancel` that returned `true`, or a sweep.
        let endedSilently = records.count - oneShotCalls - cancelled
        let summary =
            "\(threads) threads × \(operations) ops in \((workersDone - start).summary): "
            + "\(records.count) timers, \(oneShotCalls) one-shot fires, \(repeatingCalls) repeating calls, "
            + "\(cancelled) cancels, \(moves.load(ordering: .relaxed)) reschedules, "
            + "\(endedSilently) swept by \(cancelAlls.load(ordering: .relaxed)) cancelAll, \(pending) left; "
            + "\(violations.count) violations"
        return Result(summary: summary, violations: violations)
    }
}
