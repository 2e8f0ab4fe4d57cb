import PreciseTimerCore
import PreciseTimerTesting
import Synchronization
import Testing

/// A reschedule to a later deadline (an idle timeout pushed on) writes the node and leaves its
/// heap entry where it is; the shard files the entry again when it reaches the top. These tests
/// pin what that must never change: no early fire, scheduling order among equal deadlines, and
/// a cancel or pause that still finds the entry wherever it is (heap or due run).
@Suite("Lazy extension")
struct LazyExtensionTests {
    private static let sequence = Atomic<UInt64>(0)
    private let noop: @Sendable (Tick) -> Void = { _ in }

    private func add(_ registry: inout ShardState, _ id: TimerID, at deadline: Int64) throws {
        let node = TimerNode.make(id: id, deadline: deadline, interval: 0, options: .init(), handler: self.noop)
        node.sequence = Self.sequence.wrappingAdd(1, ordering: .relaxed).newValue
        _ = try registry.add(node)
    }

    private func move(_ registry: inout ShardState, _ id: TimerID, to deadline: Int64) -> (found: Bool, wake: Bool) {
        registry.reschedule(id, hash: id.tableHash, to: deadline, now: 0)
    }

    /// Fires everything due at `now`; returns the IDs in firing order.
    private func fire(_ registry: inout ShardState, now: Int64) -> [TimerID] {
        var fired: [TimerID] = []
        while case .fire(let fire) = registry.next(now: now) {
            #expect(fire.node.deadline <= now, "\(fire.node.id) fired before its deadline")
            fired.append(fire.node.id)
            _ = registry.begin(fire)
        }
        return fired
    }

    @Test("a later reschedule moves nothing in the heap and asks for no wake-up; the loop files it again")
    func laterTouchIsLazy() throws {
        var registry = ShardState()
        try self.add(&registry, "session", at: 10)
        try self.add(&registry, "other", at: 50)
        #expect(self.move(&registry, "session", to: 100) == (true, false))
        #expect(registry.earliestFiledDeadline == 10, "the entry stays filed at its old deadline")
        #expect(registry.invariantViolations().isEmpty)
        // The loop never sees the early entry: its head is the other timer, then the session.
        #expect(registry.peek().deadline == 50)
        #expect(self.fire(&registry, now: 99) == ["other"])
        #expect(registry.peek().deadline == 100)
        #expect(self.fire(&registry, now: 100) == ["session"])
        #expect(registry.timers.count == 0)
    }

    @Test("an earlier reschedule moves the entry at once and wakes the loop, as before")
    func earlierTouchIsEager() throws {
        var registry = ShardState()
        try self.add(&registry, "a", at: 100)
        _ = registry.peek()
        #expect(self.move(&registry, "a", to: 20) == (true, true))
        #expect(registry.earliestFiledDeadline == 20)
        // Extended then pulled back before its old key: filed at the new one.
        #expect(self.move(&registry, "a", to: 500).found)
        #expect(self.move(&registry, "a", to: 30).found)
        #expect(registry.invariantViolations().isEmpty)
        #expect(self.fire(&registry, now: 29).isEmpty)
        #expect(self.fire(&registry, now: 30) == ["a"])
    }

    @Test("timers extended onto one deadline still fire in scheduling order")
    func orderKept() throws {
        var registry = ShardState()
        for (name, deadline) in [("first", 10), ("second", 60), ("third", 5), ("fourth", 60)] {
            try self.add(&registry, TimerID(name), at: Int64(deadline))
        }
        #expect(self.move(&registry, "first", to: 60).found)
        #expect(self.move(&registry, "third", to: 60).found)
        #expect(self.fire(&registry, now: 59).isEmpty)
        #expect(self.fire(&registry, now: 60) == ["first", "second", "third", "fourth"])
    }

    @Test("cancel and pause find an extended timer inside a due run")
    func removalFromRun() throws {
        var registry = ShardState()
        // Enough timers due at once for the heap to serve them from a due run.
        let ids = (0..<96).map { TimerID("t\($0)") }
        for id in ids { try self.add(&registry, id, at: 10) }
        for id in [ids[40], ids[41], ids[70]] { #expect(self.move(&registry, id, to: 1_000).found) }
        guard case .fire(let first) = registry.next(now: 10) else {
            Issue.record("t0 is due")
            return
        }
        _ = registry.begin(first)
        #expect(registry.dueRunCount > 0, "the storm is served from a due run")
        // Filed in the run under 10, their nodes say 1 000: found by a scan of the run.
        #expect(registry.cancel(ids[40], hash: ids[40].tableHash).node != nil)
        let paused = registry.pause(ids[41], hash: ids[41].tableHash, now: 10)
        #expect(paused)
        #expect(registry.invariantViolations().isEmpty)
        let fired = self.fire(&registry, now: 10)
        #expect(fired == Array(ids[1..<40] + ids[42..<70] + ids[71...]))
        #expect(self.fire(&registry, now: 999).isEmpty)
        #expect(self.fire(&registry, now: 1_000) == [ids[70]])
        #expect(registry.invariantViolations().isEmpty)
    }

    @Test("random touches, later and earlier, on virtual time: each timer fires once, at its last deadline")
    func randomTouches() throws {
        let timers = TestTimerService()
        let fired = Mutex<[TimerID: [Int64]]>([:])
        var deadlines: [TimerID: Int64] = [:]
        var random = SplitMix(seed: 22)
        let start = timers.now.nanoseconds
        for index in 0..<300 {
            let id = TimerID("s\(index)")
            let delay = Int64(random.next() % 1_000_000) + 1
            try timers.schedule(id: id, after: .nanoseconds(delay)) { tick in
                fired.withLock { $0[tick.id, default: []].append(timers.now.nanoseconds) }
            }
            deadlines[id] = start + delay
        }
        for step in 0..<40 {
            for _ in 0..<50 {
                let id = TimerID("s\(random.next() % 300)")
                guard deadlines[id].map({ $0 > timers.now.nanoseconds }) == true else { continue }
                // Mostly later (an idle timeout pushed on), sometimes earlier.
                let delay = Int64(random.next() % 600_000) + (random.next() % 4 == 0 ? 1 : 200_000)
                #expect(try timers.reschedule(id, after: .nanoseconds(delay)))
                deadlines[id] = timers.now.nanoseconds + delay
            }
            try timers.advance(by: .nanoseconds(Int64(random.next() % 60_000) + Int64(step)))
        }
        try timers.advance(by: .seconds(1))
        let result = fired.withLock { $0 }
        #expect(result.count == 300, "every timer fired")
        for (id, at) in result {
            #expect(at == [deadlines[id]!], "\(id) fired at \(at), due once at \(deadlines[id]!)")
        }
        #expect(timers.scheduledCount == 0)
    }
}
