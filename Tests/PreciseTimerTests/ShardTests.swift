import PreciseTimer
import PreciseTimerTesting
import Testing

/// The sharded registry seen from outside: a timer in any shard is served in time and in order,
/// whatever the loop last saw of the other shards.
@Suite("Shards")
struct ShardTests {
    /// The loop sleeps until the first far timer while later far timers land in every other
    /// shard without waking it (they are not due before its sleep): the shards stay marked for
    /// the loop. A due timer pushed into such a shard must still ring. (A version that took a
    /// marked shard to mean "a wake-up is on its way" lost this wake-up every time.)
    @Test(
        "a due timer fires while every shard holds far timers the loop has not looked at",
        arguments: Implementation.allCases)
    func dueTimerAmongMarkedShards(_ implementation: Implementation) async throws {
        for round in 0..<5 {
            let timers = try implementation.make()
            defer { timers.shutdown() }
            let fired = Recorder<Tick>()
            try timers.schedule(after: .zero) { fired.append($0) }
            #expect(await fired.wait(forCount: 1).count == 1)
            for _ in 0..<(4 * TimerCore.shardCount) {
                try timers.schedule(after: .seconds(3_600)) { _ in }
            }
            try timers.schedule(after: .zero) { fired.append($0) }
            let count = await fired.wait(forCount: 2, timeout: .seconds(10)).count
            #expect(count == 2, "round \(round): the due timer did not fire")
            guard count == 2 else { return }
        }
    }

    @Test("equal deadlines fire in scheduling order across every shard")
    func equalDeadlinesAcrossShards() throws {
        let timers = TestTimerService()
        let order = Recorder<Int>()
        let deadline = timers.now.advanced(by: .milliseconds(5))
        // Far more timers than shards, so consecutive ones land in different shards.
        for index in 0..<(8 * TimerCore.shardCount) {
            try timers.schedule(at: deadline) { _ in order.append(index) }
        }
        try timers.advance(by: .milliseconds(5))
        #expect(order.values == Array(0..<(8 * TimerCore.shardCount)))
    }

    @Test("scheduledCount, scheduledIDs and cancelAll cover every shard")
    func countsAcrossShards() throws {
        let timers = TestTimerService()
        let ids = try (0..<1_000).map { _ in try timers.schedule(after: .seconds(1)) { _ in } }
        #expect(timers.scheduledCount == 1_000)
        #expect(Set(timers.scheduledIDs) == Set(ids))
        for id in ids.prefix(300) { #expect(timers.cancel(id)) }
        #expect(timers.scheduledCount == 700)
        timers.cancelAll()
        #expect(timers.scheduledCount == 0 && timers.scheduledIDs.isEmpty)
    }
}
