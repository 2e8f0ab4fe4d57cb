import Dispatch
import Glibc
import PreciseTimer
import PreciseTimerTesting
import Synchronization
import Testing

extension StressTests {
    @Test(
        "cancel racing a fire that hops to a queue: no crash, no call after cancel, every handler released",
        .timeLimit(.minutes(5)), arguments: Implementation.allCases)
    func cancelRacingQueueHop(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        let queue = DispatchQueue(label: "stress-hop", attributes: .concurrent)
        let sequencer = Sequencer()  // No cancelAll here: only explicit cancels end these timers.
        let all = SemaphoreGuarded<[Record]>([])
        let workersDone = Recorder<Bool>()
        detachThread {
            runOnThreads(4) { worker in
                var generator = SplitMix(seed: UInt64(100 + worker))
                var mine: [Record] = []
                for _ in 0..<2_500 {
                    let record = Record(repeating: true, scheduleStart: sequencer.next())
                    let probe = ReleaseProbe(record)
                    // A 20 µs period on a concurrent queue: a fire is often on its way to the
                    // queue (on Dispatch, its source being suspended) at the moment of the cancel.
                    let id = try? timers.scheduleRepeating(
                        every: .microseconds(20), options: .init(executor: .queue(queue))
                    ) { _ in
                        probe.record.began(sequencer)
                        probe.record.completions.add(1, ordering: .sequentiallyConsistent)
                    }
                    guard let id else { continue }
                    mine.append(record)
                    usleep(UInt32(generator.next() % 300))
                    if timers.cancel(id) { record.cancelled(byItself: false) }
                }
                all.withLock { $0 += mine }
            }
            workersDone.append(true)
        }
        #expect(await workersDone.wait(timeout: .seconds(90)) { !$0.isEmpty }, "workers deadlocked or crashed")
        #expect(timers.scheduledIDs.isEmpty)
        let records = all.withLock { $0 }
        #expect(records.count == 4 * 2_500, "a schedule failed")
        let settled = await workersDone.wait(timeout: .seconds(10)) { _ in
            records.allSatisfy {
                $0.released.load(ordering: .sequentiallyConsistent)
                    && $0.starts.load(ordering: .sequentiallyConsistent)
                        == $0.completions.load(ordering: .sequentiallyConsistent)
            }
        }
        #expect(settled, "handlers not released or calls not finished")
        #expect(await Self.shutdown(timers), "shutdown did not return")
        var tally = Tally()
        for record in records {
            let problem = tally.account(record, cancelAllEnded: -1)
            #expect(problem == nil, "\(problem ?? "")")
        }
        #expect(tally.repeatsCancelledByOthers == records.count)
    }

    /// How the timers ended; every timer is counted in exactly one ending.
    struct Tally: CustomStringConvertible {
        var oneShotsFired = 0
        var oneShotsCancelled = 0
        var oneShotsCancelledByCancelAll = 0
        var repeatsCancelledByThemselves = 0
        var repeatsCancelledByOthers = 0
        var repeatsCancelledByCancelAll = 0
        var calls = 0
        var lateButInFlight = 0
        /// Timers scheduled after the last `cancelAll`: fired or cancelled by ID, no leeway.
        var strictlyAccounted = 0

        /// Checks one timer's history and counts its ending; returns what is wrong with it.
        mutating func account(_ record: Record, cancelAllEnded: Int) -> String? {
            let starts = record.starts.load(ordering: .sequentiallyConsistent)
            let cancels = record.cancelsReturningTrue.load(ordering: .sequentiallyConsistent)
            let bySelf = record.cancelledBySelf.load(ordering: .sequentiallyConsistent)
            let afterOwnCancel = record.startsAfterOwnCancel.load(ordering: .sequentiallyConsistent)
            let afterOutsideCancel = record.startsAfterOutsideCancel.load(ordering: .sequentiallyConsistent)
            let cancelAllMayHaveEndedIt = record.scheduleStart < cancelAllEnded
            self.calls += starts
            self.lateButInFlight += afterOutsideCancel
            if !cancelAllMayHaveEndedIt { self.strictlyAccounted += 1 }

            if afterOwnCancel > 0 { return "\(afterOwnCancel) calls began after its own cancel returned true" }
            if afterOutsideCancel > 1 { return "\(afterOutsideCancel) calls began after a cancel returned" }
            if cancels > 1 { return "cancel returned true \(cancels) times" }
            if starts != record.completions.load(ordering: .sequentiallyConsistent) { return "a call never finished" }
            if !record.released.load(ordering: .sequentiallyConsistent) { return "handler never released" }
            if record.repeating {
                switch (cancels, bySelf) {
                case (1, true): self.repeatsCancelledByThemselves += 1
                case (1, false): self.repeatsCancelledByOthers += 1
                default:
                    guard cancelAllMayHaveEndedIt else { return "repeating timer ended without any cancel" }
                    self.repeatsCancelledByCancelAll += 1
                }
            } else {
                switch (starts, cancels) {
                case (1, 0): self.oneShotsFired += 1
                case (0, 1): self.oneShotsCancelled += 1
                case (0, 0):
                    guard cancelAllMayHaveEndedIt else { return "one-shot neither fired nor cancelled" }
                    self.oneShotsCancelledByCancelAll += 1
                default: return "one-shot ran \(starts) times, cancel returned true \(cancels) times"
                }
            }
            return nil
        }

        var description: String {
            "one-shots: \(self.oneShotsFired) fired, \(self.oneShotsCancelled) cancelled, "
                + "\(self.oneShotsCancelledByCancelAll) by cancelAll; repeating: "
                + "\(self.repeatsCancelledByThemselves) cancelled by own handler, "
                + "\(self.repeatsCancelledByOthers) by another thread or handler, "
                + "\(self.repeatsCancelledByCancelAll) by cancelAll; "
                + "\(self.strictlyAccounted) scheduled after the last cancelAll; "
                + "\(self.lateButInFlight) calls already begun when a cancel returned"
        }
    }

    static func format(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000
        return "\(milliseconds / 1_000).\(String(milliseconds % 1_000 / 10).leftPadded(to: 2))"
    }

    /// Shuts down on a Dispatch thread, waiting a bounded time for it to return.
    static func shutdown(_ timers: any TimerService) async -> Bool {
        let returned = Recorder<Bool>()
        detachThread {
            timers.shutdown()
            returned.append(true)
        }
        return await returned.wait(timeout: .seconds(10)) { !$0.isEmpty }
    }
}
