import Synchronization

extension TimerCore {
    // MARK: Other clocks

    /// Changes whenever a timer on the wall or the continuous clock is added, ends or moves on
    /// its own clock: an engine compares it after each pass and, when it changed, re-arms its
    /// timers on those clocks at ``earliestBoundDeadlines()``. One relaxed load.
    package var boundVersion: UInt64 { self.boundChanges.value.load(ordering: .acquiring) }

    /// The wall clock of whatever drives the core (`CLOCK_REALTIME`, or a virtual one).
    package var wallClockNow: WallClockInstant {
        WallClockInstant(nanosecondsSinceEpoch: self.doorbell.wallClockNow())
    }

    /// The clocks moved against each other: a wall-clock step, a resume from suspend, or the
    /// engine's wall-clock or continuous timerfd fired. Re-estimates every timer bound to the
    /// wall or the continuous clock (see ``ClockBinding``) and wakes the loop if one is due sooner.
    package func rebase() {
        let now = self.doorbell.now()
        for index in self.shards.indices where self.shards[index].boundCount.load(ordering: .relaxed) > 0 {
            if self.shards[index].withLock({ $0.rebase(now: now) }) {
                self.wakeLoop(for: index, deadline: .min)
            }
        }
    }

    /// The earliest deadlines of pending timers on the wall clock (nanoseconds since the epoch)
    /// and on the continuous clock (`CLOCK_BOOTTIME`), for an engine's timers on those clocks.
    package func earliestBoundDeadlines() -> (wall: Int64?, continuous: Int64?) {
        var wall: Int64?
        var continuous: Int64?
        for shard in self.shards where shard.boundCount.load(ordering: .relaxed) > 0 {
            let (shardWall, shardContinuous) = shard.withLock { $0.earliestBoundDeadlines() }
            if let shardWall { wall = min(wall ?? .max, shardWall) }
            if let shardContinuous { continuous = min(continuous ?? .max, shardContinuous) }
        }
        return (wall, continuous)
    }

    /// The work the shards' ``ShardState/earliestBoundDeadlines()`` bookkeeping has done so far,
    /// in heap entries added or looked at (for tests: counted, not timed).
    package var boundDeadlineWork: Int {
        self.shards.reduce(0) { $0 + $1.withLock { $0.boundDeadlineWork } }
    }
}
