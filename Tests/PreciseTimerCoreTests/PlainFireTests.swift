import PreciseTimerCore
import PreciseTimerTesting
import Synchronization
import Testing

/// The loop's one-step path for plain one-shots (``ShardState/nextPlainOnLoop(now:notAfter:seen:)``)
/// against the general one (``ShardState/nextOnLoop(now:notAfter:isFresh:seen:)``).
@Suite struct PlainFireTests {
    @Test("a plain one-shot's tick is the one the general path gives an equal one-shot with options")
    func sameTickBothWays() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let ticks = Mutex<[Tick]>([])
        // `.burst` gives the second timer options (so the general path), and changes nothing for a one-shot.
        try timers.schedule(id: "plain", after: .milliseconds(5)) { tick in ticks.withLock { $0.append(tick) } }
        try timers.schedule(id: "general", after: .milliseconds(5), options: .init(missedTicks: .burst)) { tick in
            ticks.withLock { $0.append(tick) }
        }
        try timers.schedule(id: "plain-2", after: .milliseconds(5)) { tick in ticks.withLock { $0.append(tick) } }
        // The loop comes 2 ms late: both are served by the same late pass.
        timers.moveClock(to: timers.now.advanced(by: .milliseconds(7)))
        try timers.advance(by: .zero)
        let fired = ticks.withLock { $0 }
        try #require(fired.count == 3)
        // Due at one instant: in the order they were scheduled, whichever path each took.
        #expect(fired.map(\.id) == ["plain", "general", "plain-2"])
        let (plain, general) = (fired[0], fired[1])
        #expect(plain.count == 1 && general.count == 1)
        #expect(plain.missed == 0 && general.missed == 0)
        #expect(plain.scheduledAt == general.scheduledAt)
        #expect(plain.firedAt == general.firedAt)
        #expect(plain.lateness == .milliseconds(2))
        #expect(plain.wallClockDeadline == nil && general.wallClockDeadline == nil)
        #expect(plain.tolerance == .zero && general.tolerance == .zero)
        #expect(plain.generation < general.generation && general.generation < fired[2].generation)
        for id: TimerID in ["plain", "general", "plain-2"] {
            #expect(!timers.isScheduled(id))
            #expect(!timers.cancel(id), "a fired one-shot is gone")
        }
        // Its ID is free again, as after the general path.
        try timers.schedule(id: "plain", after: .milliseconds(1)) { _ in }
        #expect(timers.isScheduled("plain"))
    }

    @Test("handlerAddress is the handler's function pointer: 0 once the handler is gone")
    func handlerAddress() {
        let node = TimerNode.make(id: "node", deadline: 0, interval: 0, options: .init()) { _ in }
        #expect(node.handlerAddress != 0)
        node.handler = nil
        #expect(node.handlerAddress == 0)
        #expect(node.handlerContextAddress == 0)
    }

    @Test("a service's tick of a generated ID builds it when read, and equals the tick made from that ID")
    func generatedTickID() {
        let generated = TimerNode(generatedNumber: 4_000_000_007, deadline: 5, interval: 0, options: .init()) { _ in }
        let named = NamedTimerNode(id: "session-7", deadline: 5, interval: 0, options: .init()) { _ in }
        named.sequence = 12
        for (node, id) in [(generated as TimerNode, TimerID("timer-4000000007")), (named, "session-7")] {
            let tick = Tick(
                of: node, count: 1, missed: 0, scheduledAt: MonotonicInstant(nanoseconds: 5),
                firedAt: MonotonicInstant(nanoseconds: 9), wallClockDeadline: nil, tolerance: .zero)
            let made = Tick(
                id: id, count: 1, missed: 0, scheduledAt: MonotonicInstant(nanoseconds: 5),
                firedAt: MonotonicInstant(nanoseconds: 9), generation: node.sequence)
            #expect(tick.id == id && tick.generation == node.sequence)
            #expect(tick.handle == TimerHandle(id: id, generation: node.sequence))
            #expect(tick == made && tick.hashValue == made.hashValue, "\(id)")
            #expect(tick.description == made.description)
            // Any other field tells them apart.
            let later = Tick(
                id: id, count: 2, missed: 0, scheduledAt: MonotonicInstant(nanoseconds: 5),
                firedAt: MonotonicInstant(nanoseconds: 9), generation: node.sequence)
            let renamed = Tick(
                id: "other", count: 1, missed: 0, scheduledAt: MonotonicInstant(nanoseconds: 5),
                firedAt: MonotonicInstant(nanoseconds: 9), generation: node.sequence)
            #expect(tick != later && tick != renamed)
        }
    }
}
