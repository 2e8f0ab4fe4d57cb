extension ShardState {
    // MARK: Bound timers

    /// Takes a due wall-clock timer: a one-shot answers its instant; a calendar timer counts the
    /// occurrences that passed since the one it was due for and applies its policy: `.skip` and
    /// `.delay` answer the latest, `missed` counting the others; `.burst` answers each in turn, at
    /// most ``MissedTickPolicy/maximumBurst`` in a row. The count is bounded (``occurrenceScan``):
    /// after a very long sleep a schedule that fires every second is caught up over several calls.
    mutating func takeWallClock(
        _ node: TimerNode, _ clock: ClockBinding, now: Int64, clocks: ClockBinding.Readings
    ) -> Fire {
        var answered = clock.anchor
        var missed: UInt64 = 0
        if let schedule = clock.schedule {
            var latest = clock.anchor
            var later: UInt64 = 0
            while later < Self.occurrenceScan,
                let occurrence = schedule.next(after: WallClockInstant(nanosecondsSinceEpoch: latest)),
                occurrence.nanosecondsSinceEpoch <= clocks.wall
            {
                latest = occurrence.nanosecondsSinceEpoch
                later += 1
            }
            switch node.policy {
            case .burst where later == 0:
                node.catchUp = 0
            case .burst where Int(node.catchUp) < MissedTickPolicy.maximumBurst:
                node.catchUp += 1
            case .skip, .burst, .delay:
                node.catchUp = 0
                answered = latest
                missed = later
            }
            clock.anchor = answered
        }
        // Where the occurrence fell on the monotonic clock, for `scheduledAt` and lateness.
        let scheduledAt = min(now, saturatingSubtract(now, saturatingSubtract(clocks.wall, answered)))
        var fire = Fire(node: node, epoch: node.epoch, missed: missed, scheduledAt: scheduledAt)
        fire.occurrence = answered
        return fire
    }

    /// At most this many passed occurrences are counted per call of a calendar timer.
    static let occurrenceScan: UInt64 = 4096

    /// The clocks moved against each other (a step, a suspend, or the engine's wall-clock timer
    /// fired): re-estimates every pending bound timer. Returns whether the loop must be woken.
    package mutating func rebase(now: Int64) -> Bool {
        guard !self.bound.isEmpty else { return false }
        let clocks = self.readings(now)
        var wake = false
        for node in self.bound.values where node.state == .pending {
            let estimate = node.clock!.resolve(estimate: node.deadline, clocks).estimate
            guard estimate != node.deadline else { continue }
            self.heap.remove(node)
            node.deadline = estimate
            wake = self.push(node) || wake
            self.boundVersion &+= 1
        }
        return wake
    }

    /// The earliest deadline of a pending timer on each clock other than the monotonic one:
    /// what the engine arms its `CLOCK_REALTIME` and `CLOCK_BOOTTIME` timerfds at.
    package func earliestBoundDeadlines() -> (wall: Int64?, continuous: Int64?) {
        var wall: Int64?
        var continuous: Int64?
        for node in self.bound.values where node.state == .pending {
            let clock = node.clock!
            switch clock.kind {
            case .wall: wall = min(wall ?? .max, clock.anchor)
            case .continuous: continuous = min(continuous ?? .max, saturatingAdd(node.deadline, clock.anchor))
            }
        }
        return (wall, continuous)
    }

    /// The number of timers bound to the continuous or the wall clock.
    package var boundCount: Int { self.bound.count }

    mutating func forget(_ node: TimerNode) {
        guard node.clock != nil else { return }
        self.bound[ObjectIdentifier(node)] = nil
        self.boundVersion &+= 1
    }

    /// Moves a bound timer's deadline on its own clock to match monotonic `deadline`.
    mutating func retarget(_ node: TimerNode, to deadline: Int64, now: Int64) {
        guard let clock = node.clock else { return }
        clock.retarget(to: deadline, self.readings(now))
        self.boundVersion &+= 1
    }

    /// The earliest deadline of a pending timer in this shard, read without touching what the
    /// loop saw (unlike ``peek()``).
    package var earliestPendingDeadline: Int64? { self.heap.min?.deadline }

    /// The number of heap entries (for tests: one per pending timer).
    package var heapCount: Int { self.heap.count }

    /// The pending timers gathered into the heap's due run (for tests).
    package var dueRunCount: Int { self.heap.dueRunCount }

    /// The number of registered timers.
    package var count: Int { self.timers.count }

    /// Appends the IDs of every registered timer.
    package func appendIDs(to ids: inout [TimerID]) {
        self.timers.forEachNode { ids.append($0.id) }
    }
}
