import Dispatch
import Glibc
import PreciseTimer
import PreciseTimerTesting
import Synchronization
import Testing

/// Many threads hammering one service: every timer ends exactly once, nothing starts after its
/// cancel returned, nothing deadlocks (every wait is bounded, so a hang fails the test).
@Suite("Stress")
struct StressTests {
    static let threads = 8
    static let operationsPerThread = 2_000
    /// Operations after this one (per thread) never call `cancelAll`, so the timers scheduled
    /// late in the run must each be accounted for by a fire or a `cancel` that returned `true`.
    static let lastCancelAllOperation = 1_400

    /// A global order of events, so a handler can tell whether a `cancelAll` that returned had
    /// begun after its timer was scheduled.
    final class Sequencer: Sendable {
        private let counter = Atomic<Int>(0)
        /// The largest start number of a `cancelAll` that has returned: every timer whose
        /// `schedule` returned before it was removed by it.
        let cancelAllCovers = Atomic<Int>(-1)
        /// The largest end number of a `cancelAll`: a timer removed by one was scheduled before.
        let cancelAllEnded = Atomic<Int>(-1)
        let cancelAlls = Atomic<Int>(0)

        func next() -> Int { self.counter.add(1, ordering: .sequentiallyConsistent).newValue }

        func cancelAll(on timers: any TimerService) {
            let start = self.next()
            timers.cancelAll()
            let end = self.next()
            self.cancelAllCovers.max(start, ordering: .sequentiallyConsistent)
            self.cancelAllEnded.max(end, ordering: .sequentiallyConsistent)
            self.cancelAlls.add(1, ordering: .relaxed)
        }
    }

    /// One timer's history, written with atomics by the handler and by every canceller.
    final class Record: Sendable {
        let repeating: Bool
        /// Taken just before `schedule` was called.
        let scheduleStart: Int
        /// Taken just after `schedule` returned; `Int.max` until then.
        let scheduleReturn = Atomic<Int>(.max)
        let starts = Atomic<Int>(0)
        let completions = Atomic<Int>(0)
        /// How often `cancel` returned `true` for this timer, over all threads: at most once.
        let cancelsReturningTrue = Atomic<Int>(0)
        let cancelledBySelf = Atomic<Bool>(false)
        let cancelledFromOutside = Atomic<Bool>(false)
        /// Calls begun after the timer's own handler had cancelled it: there must be none.
        let startsAfterOwnCancel = Atomic<Int>(0)
        /// Calls begun after another thread's `cancel` or `cancelAll` returned: only a call the
        /// service had already begun may still start its closure, so at most one.
        let startsAfterOutsideCancel = Atomic<Int>(0)
        let released = Atomic<Bool>(false)

        init(repeating: Bool, scheduleStart: Int) {
            self.repeating = repeating
            self.scheduleStart = scheduleStart
        }

        /// The first thing every handler call does.
        func began(_ sequencer: Sequencer) {
            if self.cancelledBySelf.load(ordering: .sequentiallyConsistent) {
                self.startsAfterOwnCancel.add(1, ordering: .relaxed)
            } else if self.cancelledFromOutside.load(ordering: .sequentiallyConsistent)
                || self.scheduleReturn.load(ordering: .sequentiallyConsistent)
                    < sequencer.cancelAllCovers.load(ordering: .sequentiallyConsistent)
            {
                self.startsAfterOutsideCancel.add(1, ordering: .relaxed)
            }
            self.starts.add(1, ordering: .sequentiallyConsistent)
        }

        func cancelled(byItself: Bool) {
            self.cancelsReturningTrue.add(1, ordering: .relaxed)
            if byItself {
                self.cancelledBySelf.store(true, ordering: .sequentiallyConsistent)
            } else {
                self.cancelledFromOutside.store(true, ordering: .sequentiallyConsistent)
            }
        }
    }

    /// Captured by each handler; its deinit proves the service let go of the handler.
    final class ReleaseProbe: Sendable {
        let record: Record
        init(_ record: Record) { self.record = record }
        deinit { self.record.released.store(true, ordering: .sequentiallyConsistent) }
    }

    /// A scheduled timer as its worker remembers it.
    struct Scheduled: Sendable {
        let id: TimerID
        let record: Record
    }

    @Test(
        "8 threads schedule, cancel, cancelAll and fire; every timer is accounted for exactly once",
        .timeLimit(.minutes(5)), arguments: Implementation.allCases)
    func hammer(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        let sequencer = Sequencer()
        let all = SemaphoreGuarded<[Scheduled]>([])
        let failures = SemaphoreGuarded<[String]>([])
        let running = Atomic<Int>(0)
        let mostRunning = Atomic<Int>(0)
        let workersDone = Recorder<Bool>()
        let handlerQueue = DispatchQueue(label: "stress-handlers", attributes: .concurrent)
        let clock = ContinuousClock()
        let start = clock.now

        detachThread {
            runOnThreads(Self.threads) { worker in
                let now = running.add(1, ordering: .relaxed).newValue
                mostRunning.max(now, ordering: .relaxed)
                defer { running.subtract(1, ordering: .relaxed) }
                var generator = SplitMix(seed: UInt64(worker + 1))
                var mine: [Scheduled] = []
                for index in 0..<Self.operationsPerThread {
                    let roll = generator.next() % 200
                    let mayCancelAll = index < Self.lastCancelAllOperation
                    let explicitID: TimerID? = generator.next() % 4 == 0 ? nil : TimerID("w\(worker)-\(index)")
                    let options: TimerOptions =
                        generator.next() % 2 == 0 ? .init() : .init(executor: .queue(handlerQueue))
                    do {
                        switch roll {
                        case 0..<80:  // A one-shot due within 2 ms.
                            let record = Record(repeating: false, scheduleStart: sequencer.next())
                            let probe = ReleaseProbe(record)
                            let id = try timers.schedule(
                                id: explicitID, after: .microseconds(Int64(generator.next() % 2_000)), options: options
                            ) { _ in
                                probe.record.began(sequencer)
                                probe.record.completions.add(1, ordering: .sequentiallyConsistent)
                            }
                            record.scheduleReturn.store(sequencer.next(), ordering: .sequentiallyConsistent)
                            mine.append(Scheduled(id: id, record: record))
                        case 80..<130:  // Repeating; cancels a neighbour at its 2nd call, itself after a few.
                            let record = Record(repeating: true, scheduleStart: sequencer.next())
                            let probe = ReleaseProbe(record)
                            let victim = mine.last
                            let stopAfter = 1 + generator.next() % 4
                            let cancelsAll = mayCancelAll && generator.next() % 100 == 0
                            let id = try timers.scheduleRepeating(
                                id: explicitID, every: .microseconds(Int64(300 + generator.next() % 700)),
                                options: options
                            ) { tick in
                                let record = probe.record
                                record.began(sequencer)
                                if tick.count == 1, cancelsAll { sequencer.cancelAll(on: timers) }
                                if tick.count == 2, let victim, timers.cancel(victim.id) {
                                    victim.record.cancelled(byItself: false)
                                }
                                if tick.count >= stopAfter, timers.cancel(tick.id) { record.cancelled(byItself: true) }
                                record.completions.add(1, ordering: .sequentiallyConsistent)
                            }
                            record.scheduleReturn.store(sequencer.next(), ordering: .sequentiallyConsistent)
                            mine.append(Scheduled(id: id, record: record))
                        case 130..<199:  // Cancel one of ours, maybe long gone.
                            if let victim = mine.randomElement(using: &generator), timers.cancel(victim.id) {
                                victim.record.cancelled(byItself: false)
                            }
                        default:
                            if mayCancelAll { sequencer.cancelAll(on: timers) }
                        }
                    } catch {
                        failures.withLock { $0.append("\(explicitID?.description ?? "generated"): \(error)") }
                    }
                    usleep(1_000)  // Spread the run over a few seconds, so timers fire meanwhile.
                }
                all.withLock { $0 += mine }
            }
            workersDone.append(true)
        }

        // Bounded waits: a deadlock fails here instead of hanging CI.
        #expect(await workersDone.wait(timeout: .seconds(60)) { !$0.isEmpty }, "workers deadlocked")
        #expect(
            await workersDone.wait(timeout: .seconds(30)) { _ in timers.scheduledIDs.isEmpty },
            "still scheduled: \(timers.scheduledIDs.prefix(5))")
        let timersSnapshot = all.withLock { $0 }
        // Calls in flight on the queue finish; then every handler must have been released.
        let settled = await workersDone.wait(timeout: .seconds(10)) { _ in
            timersSnapshot.allSatisfy {
                $0.record.released.load(ordering: .sequentiallyConsistent)
                    && $0.record.starts.load(ordering: .sequentiallyConsistent)
                        == $0.record.completions.load(ordering: .sequentiallyConsistent)
            }
        }
        #expect(settled, "handlers not released or calls not finished")
        let seconds = clock.now - start
        #expect(await Self.shutdown(timers), "shutdown did not return")

        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(5) })")
        #expect(mostRunning.load(ordering: .relaxed) == Self.threads, "the workers did not all run at once")
        #expect(Set(timersSnapshot.map(\.id)).count == timersSnapshot.count, "an ID was handed out twice")
        #expect(timersSnapshot.count > Self.threads * Self.operationsPerThread / 2)

        let cancelAllEnded = sequencer.cancelAllEnded.load(ordering: .sequentiallyConsistent)
        var tally = Tally()
        for timer in timersSnapshot {
            let problem = tally.account(timer.record, cancelAllEnded: cancelAllEnded)
            #expect(problem == nil, "\(timer.id): \(problem ?? "")")
        }
        #expect(tally.strictlyAccounted > 0, "no timer was scheduled after the last cancelAll")
        print(
            "stress[\(implementation)]: \(Self.threads) threads, \(Self.format(seconds)) s, "
                + "\(timersSnapshot.count) timers, \(tally.calls) handler calls, "
                + "\(sequencer.cancelAlls.load(ordering: .relaxed)) cancelAll; \(tally)")
    }

}

extension String {
    func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - self.count)) + self
    }
}
