import Glibc
import PreciseTimerCore
import PreciseTimerTesting
import Synchronization
import Testing

/// A thread keeps one ended plain node (``SpareNode``) for its next plain timer. Each test is
/// synchronous: it runs on one thread, whose spare it empties first (another test on the same
/// worker thread may have left one).
@Suite("A thread's spare node")
struct SpareNodeTests {
    /// A plain node as a service builds it, ended.
    private static func endedPlainNode(_ number: UInt64 = 1) -> TimerNode {
        let node = TimerNode(generatedNumber: number, deadline: 10, interval: 0, options: TimerOptions()) { _ in }
        node.state = .ended
        return node
    }

    @Test(
        "a cancelled plain timer's node serves this thread's next plain timer; its old handle names nothing",
        .enabled(if: SpareNode.isEnabled, "a sanitized build keeps no spare"))
    func reusedByTheNextTimer() throws {
        _ = SpareNode.take()
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let old = try timers.scheduleTimer(.after(.seconds(1))) { _ in Issue.record("a cancelled timer fired") }
        #expect(timers.cancel(old))
        let fired = Mutex<[Tick]>([])
        let start = timers.now
        let new = try timers.scheduleTimer(.after(.seconds(2))) { tick in fired.withLock { $0.append(tick) } }
        #expect(new.location == old.location, "the cancelled node was not reused")
        #expect(new.generation != old.generation && new != old)
        #expect(!timers.cancel(old), "the old handle ended the timer that reuses its node")
        #expect(!timers.isScheduled(old.id) && timers.isScheduled(new.id))
        try timers.advance(by: .seconds(3))
        let ticks = fired.withLock { $0 }
        #expect(ticks.map(\.handle) == [new])
        #expect(ticks.first?.count == 1 && ticks.first?.scheduledAt == start.advanced(by: .seconds(2)))
        #expect(timers.scheduledCount == 0)
    }

    @Test(
        "a reused node starts as a new one: moved, paused and resumed before, it fires once, on time",
        .enabled(if: SpareNode.isEnabled, "a sanitized build keeps no spare"))
    func reusedNodeStartsFresh() throws {
        _ = SpareNode.take()
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let old = try timers.scheduleTimer(.after(.seconds(1))) { _ in }
        try timers.reschedule(old.id, after: .seconds(5))  // Later: the lazy extension bumps its epoch.
        #expect(timers.pause(old.id))
        #expect(timers.cancel(old))
        let calls = Mutex(0)
        let new = try timers.scheduleTimer(.after(.seconds(1))) { _ in calls.withLock { $0 += 1 } }
        #expect(new.location == old.location)
        #expect(!timers.isPaused(new.id))
        try timers.advance(by: .milliseconds(999))
        #expect(calls.withLock { $0 } == 0, "early")
        try timers.advance(by: .seconds(10))
        #expect(calls.withLock { $0 } == 1)
    }

    @Test("reuse leaves every field as a new node's")
    func reuseResetsEveryField() {
        let node = TimerNode(generatedNumber: 7, deadline: 70, interval: 0, options: TimerOptions()) { _ in }
        node.place(hash: TimerID.tableHash(generatedNumber: 7)!)
        node.heapIndex = 12
        node.epoch = 3
        node.era = 2
        node.count = 1
        node.pauseWhenDone = true
        node.isRescheduled = true
        node.state = .ended
        node.handler = nil  // Ended: its handler was moved out.
        node.reuse(deadline: 90) { _ in }
        node.name(number: 9, hash: TimerID.tableHash(generatedNumber: 9)!)
        let fresh = TimerNode(generatedNumber: 9, deadline: 90, interval: 0, options: TimerOptions()) { _ in }
        fresh.place(hash: TimerID.tableHash(generatedNumber: 9)!)
        #expect(node.deadline == fresh.deadline && node.sequence == fresh.sequence)
        #expect(node.heapIndex == fresh.heapIndex && node.state == fresh.state)
        #expect(node.epoch == fresh.epoch && node.era == fresh.era && node.shard == fresh.shard)
        #expect(node.count == fresh.count && node.pauseWhenDone == fresh.pauseWhenDone)
        #expect(node.isRescheduled == fresh.isRescheduled)
        #expect(node.handlerAddress != 0 && node.isPlain && node.id == fresh.id)
    }

    @Test(
        "a node referenced elsewhere, or not plain, or not ended, is not kept",
        .enabled(if: SpareNode.isEnabled, "a sanitized build keeps no spare"))
    func onlyUnsharedEndedPlainNodes() throws {
        _ = SpareNode.take()
        var shared: TimerNode? = Self.endedPlainNode()
        let other = shared
        SpareNode.offer(&shared)
        #expect(shared != nil && SpareNode.take() == nil, "kept a node something else references")
        withExtendedLifetime(other) {}

        var named: TimerNode? = NamedTimerNode(id: "job", deadline: 1, interval: 0, options: TimerOptions()) { _ in }
        named?.state = .ended
        var repeating: TimerNode? = TimerNode(
            generatedNumber: 2, deadline: 1, interval: 1_000_000, options: TimerOptions()
        ) { _ in }
        repeating?.state = .ended
        var pending: TimerNode? = TimerNode(generatedNumber: 3, deadline: 1, interval: 0, options: TimerOptions()) {
            _ in
        }
        SpareNode.offer(&named)
        SpareNode.offer(&repeating)
        SpareNode.offer(&pending)
        #expect(named != nil && repeating != nil && pending != nil && SpareNode.take() == nil)

        var plain: TimerNode? = Self.endedPlainNode(4)
        let address = ObjectIdentifier(plain!)
        SpareNode.offer(&plain)
        #expect(plain == nil)
        var second: TimerNode? = Self.endedPlainNode(5)
        SpareNode.offer(&second)
        #expect(second != nil, "a thread keeps one spare")
        let taken = SpareNode.take()
        #expect(taken.map(ObjectIdentifier.init) == address)
        #expect(SpareNode.take() == nil)
    }

    @Test(
        "a build under a sanitizer keeps no spare: every ended node is freed",
        .enabled(if: !SpareNode.isEnabled, "only a sanitized build keeps no spare"))
    func sanitizedBuildKeepsNoSpare() {
        _ = SpareNode.take()
        var plain: TimerNode? = Self.endedPlainNode(7)
        SpareNode.offer(&plain)
        #expect(plain != nil && SpareNode.take() == nil, "a sanitized build kept a node for reuse")
    }

    @Test("a thread's exit releases its spare", .enabled(if: SpareNode.isEnabled, "a sanitized build keeps no spare"))
    func threadExitReleasesSpare() throws {
        final class Watch: @unchecked Sendable {
            weak var node: TimerNode?
        }
        let watch = Watch()
        let done = Mutex(false)
        let thread = try PosixThread.start(detached: false) {
            var node: TimerNode? = Self.endedPlainNode(6)
            watch.node = node
            SpareNode.offer(&node)
            done.withLock { $0 = node == nil }
        }.get()
        pthread_join(thread, nil)
        #expect(done.withLock { $0 }, "the thread did not keep the node")
        #expect(watch.node == nil, "the thread's exit did not release its spare")
    }
}
