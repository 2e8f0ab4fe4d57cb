import PreciseTimer
import PreciseTimerTesting
import Testing

/// ``TickSequence`` on both real services and, step by step, on virtual time.
@Suite("Async: TickSequence", .timeLimit(.minutes(5)))
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
