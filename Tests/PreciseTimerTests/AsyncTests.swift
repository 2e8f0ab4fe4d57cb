import PreciseTimer
import PreciseTimerTesting
import Testing

/// How a sleep ended.
enum SleepOutcome: Sendable, Hashable, CustomStringConvertible {
    case returned, cancelled, shutDown
    case failed(String)

    init(_ body: () async throws -> Void) async {
        do {
            try await body()
            self = .returned
        } catch is CancellationError {
            self = .cancelled
        } catch let error as PreciseTimerError where error.code == .shutDown {
            self = .shutDown
        } catch {
            self = .failed("\(error)")
        }
    }

    var description: String {
        switch self {
        case .returned: "returned"
        case .cancelled: "cancelled"
        case .shutDown: "shutDown"
        case .failed(let error): "failed(\(error))"
        }
    }
}

/// How late a task may resume after its timer fired, on top of ``Bounds/lateness``: a resumption
/// waits for a thread of the cooperative pool, which the rest of the suite, running in parallel
/// on 2 shared cores (a ThreadSanitizer build: seen at 5.9 s), can keep busy for seconds. Below every "never at the deadline"
/// deadline these tests use (30 s).
let resumptionBound: Duration = .seconds(15)

/// Polls `condition` every millisecond; `true` if it held before `timeout`.
func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return condition()
}

/// `MonotonicInstant` as an `InstantProtocol`, and arithmetic that never traps.
@Suite("MonotonicInstant: InstantProtocol")
struct MonotonicInstantTests {
    @Test("duration(to:) is other − self; advanced(by:) moves forward for a positive duration")
    func signs() {
        let start = MonotonicInstant(nanoseconds: 5_000_000_000)
        let later = start.advanced(by: .milliseconds(5))
        #expect(later.nanoseconds == 5_005_000_000)
        #expect(start.duration(to: later) == .milliseconds(5))
        #expect(later.duration(to: start) == .milliseconds(-5))
        #expect(later - start == .milliseconds(5))
        #expect(start.advanced(by: .milliseconds(-200)).nanoseconds == 4_800_000_000)
        #expect(start.advanced(by: .seconds(-1) - .nanoseconds(1)).nanoseconds == 3_999_999_999)
    }

    @Test("sub-nanosecond parts round towards the future, so a deadline is never early")
    func rounding() {
        let start = MonotonicInstant(nanoseconds: 100)
        #expect(start.advanced(by: .nanoseconds(1) / 2).nanoseconds == 101)
        #expect(start.advanced(by: .nanoseconds(-1) / 2).nanoseconds == 100)
        #expect(start.advanced(by: .nanoseconds(-3) / 2).nanoseconds == 99)
    }

    @Test("huge durations saturate instead of trapping; differences of any two instants are exact")
    func extremes() {
        let nearEnd = MonotonicInstant(nanoseconds: .max - 5)
        #expect(nearEnd.advanced(by: .seconds(10)).nanoseconds == .max)
        #expect(nearEnd.advanced(by: .seconds(Int64.max)).nanoseconds == .max)
        #expect(MonotonicInstant(nanoseconds: .min + 5).advanced(by: .seconds(-10)).nanoseconds == .min)
        #expect(MonotonicInstant(nanoseconds: 0).advanced(by: .seconds(Int64.min)).nanoseconds == .min)
        let span = MonotonicInstant(nanoseconds: .min).duration(to: MonotonicInstant(nanoseconds: .max))
        #expect(span == .nanoseconds(Int64.max) * 2 + .nanoseconds(1))
        #expect(MonotonicInstant(nanoseconds: .max) - MonotonicInstant(nanoseconds: .min) == span)
    }

    @Test(
        "a sleep at a saturated instant is bad input: invalidDelay, nothing scheduled",
        arguments: Implementation.untimed)
    func farDeadline(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        do {
            try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(Int64.max)))
            Issue.record("a sleep until the end of time returned")
        } catch let error as PreciseTimerError {
            #expect(error.code == .invalidDelay)
        }
        #expect(timers.scheduledCount == 0)
    }
}

/// ``TimerClock`` on both real services and on virtual time.
@Suite("Async: TimerClock", .timeLimit(.minutes(2)))
struct TimerClockTests {
    @Test("now is the service's now; minimumResolution is 1 ns", arguments: Implementation.untimed)
    func basics(_ implementation: Implementation) throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let clock = timers.clock
        let before = timers.now
        let now = clock.now
        #expect(now >= before && now <= timers.now)
        #expect(clock.minimumResolution == .nanoseconds(1))
        #expect(clock.measure {} >= .zero)
    }

    @Test("sleep(until:) is never early and late by at most a generous bound", arguments: Implementation.allCases)
    func precision(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        for _ in 0..<3 {
            let deadline = timers.now.advanced(by: .milliseconds(20))
            try await timers.clock.sleep(until: deadline, tolerance: .seconds(1))
            let woke = timers.now
            #expect(woke >= deadline, "early by \(deadline - woke)")
            #expect(woke - deadline < resumptionBound)
        }
        #expect(timers.scheduledCount == 0)
    }

    @Test("Task.sleep(until:clock:) and Task.sleep(for:clock:) run on it", arguments: Implementation.allCases)
    func taskSleep(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let deadline = timers.now.advanced(by: .milliseconds(15))
        try await Task.sleep(until: deadline, tolerance: nil, clock: timers.clock)
        #expect(timers.now >= deadline)
        let before = timers.now
        try await Task.sleep(for: .milliseconds(15), clock: timers.clock)
        #expect(timers.now >= before.advanced(by: .milliseconds(15)))
        #expect(timers.now - before < .milliseconds(15) + resumptionBound)
        #expect(timers.scheduledCount == 0)
    }

    @Test(
        "a deadline in the past returns at once without scheduling; a cancelled task throws first",
        arguments: Implementation.untimed)
    func pastDeadline(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let clock = ContinuousClock()
        let start = clock.now
        try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(-1)))
        try await timers.clock.sleep(until: timers.now)
        try await Task.sleep(for: .seconds(-5), clock: timers.clock)
        #expect(clock.now - start < resumptionBound)
        #expect(timers.scheduledCount == 0)
        let outcome = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await SleepOutcome { try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(-1))) }
        }.value
        #expect(outcome == .cancelled)
    }

    @Test("on virtual time a sleep resumes exactly when advance passes its deadline")
    func virtualSleep() async throws {
        let timers = TestTimerService()
        let deadline = timers.now.advanced(by: .milliseconds(10))
        let woke = Recorder<MonotonicInstant>()
        let sleeper = Task {
            try await timers.clock.sleep(until: deadline)
            woke.append(timers.now)
        }
        #expect(await eventually { timers.scheduledCount == 1 })
        try timers.advance(by: .milliseconds(9))
        await pause(Bounds.quiet)
        #expect(woke.count == 0, "woke before its deadline")
        try timers.advance(by: .milliseconds(1))
        try await sleeper.value
        #expect(woke.values == [deadline])
        #expect(timers.scheduledCount == 0)
    }

    @Test(
        "cancellation throws CancellationError promptly, long before the deadline, leaving nothing scheduled",
        arguments: Implementation.untimed)
    func cancellation(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let clock = ContinuousClock()
        let sleeper = Task {
            await SleepOutcome { try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(30))) }
        }
        #expect(await eventually { timers.scheduledCount == 1 })
        let cancelledAt = clock.now
        sleeper.cancel()
        #expect(await sleeper.value == .cancelled)
        #expect(clock.now - cancelledAt < resumptionBound, "not promptly: the deadline is 30 s away")
        #expect(timers.scheduledCount == 0, "cancelling the task must cancel its timer")
        // A task cancelled before it sleeps never schedules anything.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await SleepOutcome { try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(30))) }
        }
        #expect(await early.value == .cancelled)
        #expect(timers.scheduledCount == 0)
    }

    @Test("cancelling a sleep ends only its own timer", arguments: Implementation.untimed)
    func cancellationIsolated(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        try timers.schedule(id: "other", after: .seconds(30)) { _ in }
        let sleeper = Task {
            await SleepOutcome { try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(30))) }
        }
        #expect(await eventually { timers.scheduledCount == 2 })
        sleeper.cancel()
        #expect(await sleeper.value == .cancelled)
        #expect(timers.isScheduled("other"))
        #expect(timers.scheduledCount == 1)
    }

    @Test("a service shut down before the sleep: .shutDown at once", arguments: Implementation.untimed)
    func shutDownBefore(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        timers.shutdown()
        let outcome = await SleepOutcome { try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(30))) }
        #expect(outcome == .shutDown)
        let forOutcome = await SleepOutcome { try await Task.sleep(for: .milliseconds(5), clock: timers.clock) }
        #expect(forOutcome == .shutDown)
    }

    @Test("a service shut down during the sleep ends it with .shutDown promptly", arguments: Implementation.untimed)
    func shutDownDuring(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        let clock = ContinuousClock()
        let sleepers = (0..<4).map { _ in
            Task { await SleepOutcome { try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(30))) } }
        }
        #expect(await eventually { timers.scheduledCount == 4 })
        let shutAt = clock.now
        timers.shutdown()
        for sleeper in sleepers {
            #expect(await sleeper.value == .shutDown)
        }
        #expect(clock.now - shutAt < resumptionBound, "not promptly: the deadline is 30 s away")
    }

    @Test(
        "a sleep with cancelAll during it ends with .shutDown (the timer was withdrawn), never hangs",
        arguments: Implementation.untimed)
    func cancelAllDuring(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let sleeper = Task {
            await SleepOutcome { try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(30))) }
        }
        #expect(await eventually { timers.scheduledCount == 1 })
        timers.cancelAll()
        #expect(await sleeper.value == .shutDown)
    }

    @Test(
        "race: tiny deadlines cancelled at once, many times; each sleep ends exactly once, nothing stays",
        arguments: Implementation.allCases)
    func cancelRacesFire(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        var counts: [SleepOutcome: Int] = [:]
        for index in 0..<1_500 {
            let sleeper = Task {
                await SleepOutcome {
                    try await timers.clock.sleep(until: timers.now.advanced(by: .microseconds(index % 40)))
                }
            }
            if index % 3 == 1 { await Task.yield() }
            if index % 3 == 2 { try? await Task.sleep(for: .microseconds(index % 50)) }
            sleeper.cancel()
            counts[await sleeper.value, default: 0] += 1
        }
        #expect(Set(counts.keys).isSubset(of: [.returned, .cancelled]), "\(counts)")
        #expect(counts.values.reduce(0, +) == 1_500)
        #expect(await eventually { timers.scheduledCount == 0 }, "a cancelled sleep left its timer")
    }

    @Test("race: fire (advance on another task) against cancel on virtual time, many times")
    func cancelRacesVirtualFire() async throws {
        let timers = TestTimerService()
        var counts: [SleepOutcome: Int] = [:]
        for index in 0..<1_000 {
            let deadline = timers.now.advanced(by: .nanoseconds(1))
            let sleeper = Task { await SleepOutcome { try await timers.clock.sleep(until: deadline) } }
            let advancer = Task.detached {
                for _ in 0..<(index % 4) { await Task.yield() }
                try timers.advance(by: .nanoseconds(1))
            }
            if index % 2 == 0 { await Task.yield() }
            sleeper.cancel()
            try await advancer.value
            counts[await sleeper.value, default: 0] += 1
        }
        #expect(Set(counts.keys).isSubset(of: [.returned, .cancelled]), "\(counts)")
        #expect(counts.values.reduce(0, +) == 1_000)
        #expect(await eventually { timers.scheduledCount == 0 })
    }

    @Test(
        "race: shutdown and cancellation against sleeps in flight; every sleep ends once, none hangs",
        arguments: Implementation.untimed)
    func shutdownRacesCancel(_ implementation: Implementation) async throws {
        var counts: [SleepOutcome: Int] = [:]
        for round in 0..<20 {
            let timers = try implementation.make()
            let sleepers = (0..<10).map { index in
                Task {
                    await SleepOutcome {
                        try await timers.clock.sleep(until: timers.now.advanced(by: .microseconds(index * 20)))
                    }
                }
            }
            if round % 2 == 0 { await Task.yield() }
            let shutter = Task.detached { timers.shutdown() }
            for (index, sleeper) in sleepers.enumerated() where index % 2 == round % 2 {
                sleeper.cancel()
            }
            await shutter.value
            for sleeper in sleepers {
                counts[await sleeper.value, default: 0] += 1
            }
        }
        #expect(Set(counts.keys).isSubset(of: [.returned, .cancelled, .shutDown]), "\(counts)")
        #expect(counts.values.reduce(0, +) == 200)
    }
}

/// ``TickSequence`` on both real services and, step by step, on virtual time.
@Suite("Async: TickSequence", .timeLimit(.minutes(2)))
struct TickSequenceTests {
    @Test("bad input throws the typed error from ticks(...)", arguments: Implementation.untimed)
    func badInput(_ implementation: Implementation) throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let cases: [(Duration, Duration?, PreciseTimerError.Code)] = [
            (.zero, nil, .invalidInterval),
            (.milliseconds(-1), nil, .invalidInterval),
            (.nanoseconds(999), nil, .invalidInterval),
            (.seconds(Int64.max), nil, .invalidInterval),
            (.milliseconds(10), .milliseconds(-1), .invalidDelay),
            (.milliseconds(10), .seconds(Int64.max), .invalidDelay),
        ]
        for (interval, delay, code) in cases {
            do {
                _ = try timers.ticks(every: interval, startingAfter: delay)
                Issue.record("ticks(every: \(interval), startingAfter: \(String(describing: delay))) did not throw")
            } catch {
                #expect(error.code == code)
            }
        }
        #expect(timers.scheduledCount == 0)
    }

    @Test("a consumer that keeps up sees consecutive grid points, the first one interval in (virtual time)")
    func keepingUpVirtual() async throws {
        let timers = TestTimerService()
        let interval = Duration.milliseconds(10)
        let origin = timers.now
        var ticks = try timers.ticks(every: interval).makeAsyncIterator()
        #expect(timers.scheduledCount == 1)
        try timers.advance(by: interval - .nanoseconds(1))
        try timers.advance(by: .nanoseconds(1))
        for index in 1...5 {
            let tick = try #require(await ticks.next())
            #expect(tick.scheduledAt == origin.advanced(by: interval * index))
            #expect(tick.firedAt == tick.scheduledAt)
            #expect(tick.missed == 0)
            #expect(tick.count == UInt64(index))
            try timers.advance(by: interval)
        }
    }

    @Test("startingAfter sets the first tick; .zero ticks at once (virtual time)")
    func startingAfter() async throws {
        let timers = TestTimerService()
        let origin = timers.now
        var immediate = try timers.ticks(every: .milliseconds(10), startingAfter: .zero).makeAsyncIterator()
        var offset = try timers.ticks(every: .milliseconds(10), startingAfter: .milliseconds(3)).makeAsyncIterator()
        try timers.advance(by: .zero)
        #expect(await immediate.next()?.scheduledAt == origin)
        try timers.advance(by: .milliseconds(3))
        #expect(await offset.next()?.scheduledAt == origin.advanced(by: .milliseconds(3)))
        try timers.advance(by: .milliseconds(10))
        #expect(await offset.next()?.scheduledAt == origin.advanced(by: .milliseconds(13)))
        #expect(await immediate.next()?.scheduledAt == origin.advanced(by: .milliseconds(10)))
    }

    @Test("a slow consumer gets merged ticks: one waits at most, 1 + missed adds up to the periods (virtual time)")
    func slowConsumerVirtual() async throws {
        let timers = TestTimerService()
        let interval = Duration.milliseconds(10)
        let origin = timers.now
        var ticks = try timers.ticks(every: interval).makeAsyncIterator()
        var received: [Tick] = []
        for periods in [10, 1, 3, 1_000, 2] {
            try timers.advance(by: interval * periods)
            received.append(try #require(await ticks.next()))
        }
        #expect(received.map(\.missed) == [9, 0, 2, 999, 1])
        let total = received.reduce(0) { $0 + 1 + Int($1.missed) }
        #expect(total == 1_016)
        #expect(received.last?.scheduledAt == origin.advanced(by: interval * total))
        #expect(received.last?.count == UInt64(total), "the merged tick is the latest one")
    }

    @Test("a merged tick under .burst adds up the same way (virtual time)")
    func slowConsumerBurst() async throws {
        let timers = TestTimerService()
        var ticks = try timers.ticks(every: .milliseconds(10), missedTicks: .burst).makeAsyncIterator()
        try timers.advance(by: .milliseconds(50))
        let tick = try #require(await ticks.next())
        #expect(tick.missed == 4)
        #expect(tick.count == 5)
    }

    @Test(
        "on real time: ticks stay on the grid; 1 + missed accounts for every period; never early",
        arguments: Implementation.allCases)
    func gridReal(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let interval = Duration.milliseconds(5)
        let start = timers.now
        var received: [Tick] = []
        for await tick in try timers.ticks(every: interval) {
            received.append(tick)
            // Slow for the middle ticks: merges must happen.
            if (3...5).contains(received.count) { try await Task.sleep(for: .milliseconds(25), clock: timers.clock) }
            if received.count == 8 { break }
        }
        #expect(timers.scheduledCount == 0, "leaving the loop cancels the timer")
        let first = try #require(received.first)
        #expect(first.scheduledAt >= start.advanced(by: interval), "the first tick comes one interval in")
        for (earlier, later) in zip(received, received.dropFirst()) {
            #expect(
                later.scheduledAt - earlier.scheduledAt == interval * Int(1 + later.missed), "\(earlier) → \(later)")
            #expect(later.firedAt >= later.scheduledAt)
        }
        #expect(received.dropFirst(3).contains { $0.missed > 0 }, "a slow consumer must see merged ticks")
    }

    @Test("break, or dropping the iterator, cancels the timer at once", arguments: Implementation.untimed)
    func leavingCancels(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let sequence = try timers.ticks(every: .milliseconds(1), startingAfter: .zero)
        if let virtual = timers as? TestTimerService {
            // The loop's iterator starts its timer when the loop begins: fire it once it is there.
            Task.detached {
                if await eventually({ virtual.scheduledCount == 1 }) { try virtual.advance(by: .zero) }
            }
        }
        for await _ in sequence {
            #expect(timers.scheduledCount == 1)
            break
        }
        #expect(timers.scheduledCount == 0)
        do {
            let iterator = sequence.makeAsyncIterator()
            #expect(timers.scheduledCount == 1)
            _ = iterator
        }
        #expect(timers.scheduledCount == 0)
    }

    @Test("each iterator has its own timer; the sequence can be iterated again (virtual time)")
    func manyIterators() async throws {
        let timers = TestTimerService()
        let sequence = try timers.ticks(every: .milliseconds(10))
        var first = sequence.makeAsyncIterator()
        try timers.advance(by: .milliseconds(5))
        var second = sequence.makeAsyncIterator()
        #expect(timers.scheduledCount == 2)
        try timers.advance(by: .milliseconds(5))
        let a = try #require(await first.next())
        try timers.advance(by: .milliseconds(5))
        let b = try #require(await second.next())
        #expect(a.id != b.id)
        #expect(b.scheduledAt - a.scheduledAt == .milliseconds(5), "the second grid starts when its iterator is made")
        #expect(a.count == 1 && b.count == 1)
        _ = (first, second)
    }

    @Test("shutdown ends the iteration: a waiting tick is delivered, then nil (virtual time)")
    func shutdownVirtual() async throws {
        let timers = TestTimerService()
        var ticks = try timers.ticks(every: .milliseconds(10)).makeAsyncIterator()
        try timers.advance(by: .milliseconds(10))
        timers.shutdown()
        #expect(await ticks.next()?.count == 1)
        #expect(await ticks.next() == nil)
        #expect(await ticks.next() == nil)
        // Already shut down when the loop begins: it ends at once.
        var late = try timers.ticks(every: .milliseconds(10)).makeAsyncIterator()
        #expect(await late.next() == nil)
    }

    @Test("shutdown during a tick loop ends it promptly", arguments: Implementation.untimed)
    func shutdownDuringLoop(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        let sequence = try timers.ticks(every: .seconds(30))
        let received = Recorder<Tick>()
        let consumer = Task {
            for await tick in sequence { received.append(tick) }
            return true
        }
        #expect(await eventually { timers.scheduledCount == 1 })
        timers.shutdown()
        #expect(await consumer.value)
        #expect(received.count == 0)
    }

    @Test("task cancellation ends the loop and cancels its timer", arguments: Implementation.untimed)
    func cancellationEndsLoop(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let sequence = try timers.ticks(every: .seconds(30))
        let consumer = Task {
            var count = 0
            for await _ in sequence { count += 1 }
            return count
        }
        #expect(await eventually { timers.scheduledCount == 1 })
        consumer.cancel()
        #expect(await consumer.value == 0)
        #expect(await eventually { timers.scheduledCount == 0 })
    }

    @Test("task cancellation drops a waiting tick and ends at once (virtual time)")
    func cancellationDropsWaiting() async throws {
        let timers = TestTimerService()
        let sequence = try timers.ticks(every: .milliseconds(10))
        let ready = Recorder<Bool>()
        let consumer = Task {
            var iterator = sequence.makeAsyncIterator()
            ready.append(true)
            while !Task.isCancelled { await Task.yield() }
            return await iterator.next()
        }
        await ready.wait(forCount: 1)
        try timers.advance(by: .milliseconds(10))
        consumer.cancel()
        #expect(await consumer.value == nil)
        #expect(timers.scheduledCount == 0)
    }

    @Test(
        "a tick loop on real time with a consumer that keeps up: on the grid, never early",
        arguments: Implementation.allCases)
    func keepingUpReal(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let interval = Duration.milliseconds(10)
        var received: [Tick] = []
        for await tick in try timers.ticks(every: interval, startingAfter: .milliseconds(20)) {
            received.append(tick)
            if received.count == 5 { break }
        }
        let first = try #require(received.first)
        for (index, tick) in received.enumerated() {
            #expect(tick.firedAt >= tick.scheduledAt)
            #expect(tick.lateness < Bounds.lateness)
            let periods = received.prefix(index + 1).dropFirst().reduce(0) { $0 + 1 + Int($1.missed) }
            #expect(tick.scheduledAt == first.scheduledAt.advanced(by: interval * periods))
        }
        #expect(timers.scheduledCount == 0)
    }
}
