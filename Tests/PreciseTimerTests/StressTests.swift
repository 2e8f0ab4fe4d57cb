import Dispatch
import Glibc
import PreciseTimer
import Testing

/// Many threads hammering one service: every timer ends exactly once, nothing runs after its
/// cancel, nothing deadlocks (every wait is bounded, so a hang fails the test).
@Suite("Stress")
struct StressTests {
    static let threads = 8
    static let operationsPerThread = 1_500

    /// What happened to each timer, keyed by its ID.
    final class Ledger: Sendable {
        struct Entry {
            var repeating = false
            var calls = 0
            var cancelled = false
            var callsStartedAfterCancel = 0
            var released = false
        }
        private let entries = SemaphoreGuarded<[TimerID: Entry]>([:])

        func scheduled(_ id: TimerID, repeating: Bool) {
            self.entries.withLock { $0[id] = Entry(repeating: repeating) }
        }
        func called(_ id: TimerID) {
            self.entries.withLock {
                $0[id, default: Entry()].calls += 1
                if $0[id]!.cancelled { $0[id]!.callsStartedAfterCancel += 1 }
            }
        }
        func cancelled(_ id: TimerID) {
            self.entries.withLock { $0[id, default: Entry()].cancelled = true }
        }
        func released(_ id: TimerID) {
            self.entries.withLock { $0[id, default: Entry()].released = true }
        }
        var snapshot: [TimerID: Entry] { self.entries.withLock { $0 } }
    }

    /// Captured by each handler; its deinit proves the service let go of the handler.
    final class ReleaseProbe: Sendable {
        let id: TimerID
        let ledger: Ledger
        init(id: TimerID, ledger: Ledger) {
            self.id = id
            self.ledger = ledger
        }
        deinit { self.ledger.released(self.id) }
    }

    @Test(
        "8 threads schedule, cancel, cancelAll and fire; every timer is accounted for",
        .timeLimit(.minutes(1)), arguments: Implementation.allCases)
    func hammer(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ledger = Ledger()
        let failures = SemaphoreGuarded<[String]>([])
        let done = Recorder<Int>()
        let queue = DispatchQueue(label: "stress-handlers", attributes: .concurrent)

        DispatchQueue.global().async {
            DispatchQueue.concurrentPerform(iterations: Self.threads) { worker in
                var generator = SplitMix(seed: UInt64(worker + 1))
                var mine: [TimerID] = []
                for index in 0..<Self.operationsPerThread {
                    let id = TimerID("w\(worker)-\(index)")
                    let roll = generator.next() % 100
                    do {
                        switch roll {
                        case 0..<45:  // One-shot due within 2 ms.
                            ledger.scheduled(id, repeating: false)
                            let probe = ReleaseProbe(id: id, ledger: ledger)
                            try timers.schedule(
                                id: id, after: .microseconds(Int64(generator.next() % 2_000)),
                                options: Self.options(roll, queue)
                            ) { tick in
                                _ = probe
                                ledger.called(tick.id)
                            }
                        case 45..<70:  // Repeating; ends itself after a few ticks, or cancels a neighbour.
                            ledger.scheduled(id, repeating: true)
                            let probe = ReleaseProbe(id: id, ledger: ledger)
                            let victim = mine.last
                            let stopAfter = 1 + generator.next() % 4
                            try timers.scheduleRepeating(
                                id: id, every: .microseconds(Int64(300 + generator.next() % 700)),
                                options: Self.options(roll, queue)
                            ) { tick in
                                _ = probe
                                ledger.called(tick.id)
                                if tick.count == 2, let victim, timers.cancel(victim) { ledger.cancelled(victim) }
                                if tick.count >= stopAfter, timers.cancel(tick.id) { ledger.cancelled(tick.id) }
                            }
                        case 70..<100 where generator.next() % 64 != 0:  // Cancel one of ours.
                            if let victim = mine.randomElement(using: &generator), timers.cancel(victim) {
                                ledger.cancelled(victim)
                            }
                        default:
                            // cancelAll reports no IDs, so it is checked by the end state (nothing
                            // scheduled, every handler released), not per timer.
                            timers.cancelAll()
                        }
                    } catch {
                        failures.withLock { $0.append("\(id): \(error)") }
                    }
                    if roll < 70 { mine.append(id) }
                    usleep(300)  // Spread the run over about a second, so timers fire meanwhile.
                }
            }
            done.append(1)
        }
        await done.wait(forCount: 1, timeout: .seconds(45))
        #expect(
            await done.wait(timeout: .seconds(30)) { _ in timers.scheduledIDs.isEmpty },
            "still scheduled: \(timers.scheduledIDs.prefix(5))")
        // Handlers still in flight on the queue finish; then every handler must be released.
        #expect(await done.wait(timeout: .seconds(10)) { _ in ledger.snapshot.values.allSatisfy(\.released) })

        let entries = ledger.snapshot
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(entries.count > Self.threads * Self.operationsPerThread / 2)
        for (id, entry) in entries {
            if entry.repeating {
                // The one call that had already begun when cancel was entered may still report in.
                #expect(
                    entry.callsStartedAfterCancel <= 1, "\(id) ran \(entry.callsStartedAfterCancel) times after cancel")
            } else {
                // A one-shot leaves the registry as its call begins: fired or cancelled, never both.
                #expect(entry.calls <= 1, "one-shot \(id) ran \(entry.calls) times")
                #expect(!(entry.cancelled && entry.calls > 0), "one-shot \(id) both cancelled and fired")
            }
        }
        let oneShots = entries.values.filter { !$0.repeating }
        let fired = oneShots.filter { $0.calls == 1 }.count
        let repeats = entries.values.filter(\.repeating).count
        print(
            "stress[\(implementation)]: \(Self.threads) threads, \(entries.count) timers (\(oneShots.count) one-shots, \(fired) fired; \(repeats) repeating), all ended and released"
        )
    }

    private static func options(_ roll: UInt64, _ queue: DispatchQueue) -> TimerOptions {
        roll % 2 == 0 ? .init() : .init(executor: .queue(queue))
    }
}

/// A tiny seeded generator, so a failing run can be replayed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { self.state = seed }
    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
