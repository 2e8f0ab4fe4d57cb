extension ShardState {
    // MARK: Bound timers

    /// Takes a due wall-clock timer. A one-shot answers its instant. A calendar timer answers the
    /// occurrence it was due for, and its missed-tick policy decides what else: `.burst` answers
    /// each passed occurrence in turn, at most ``MissedTickPolicy/maximumBurst`` in a row; `.skip`
    /// and `.delay` answer the latest, with `missed` counting the others, which the loop asks the
    /// schedule for outside the lock (``Work/catchUp``: one question however far the clock moved).
    mutating func takeWallClock(
        _ node: TimerNode, _ clock: ClockBinding, now: Int64, clocks: ClockBinding.Readings
    ) -> Fire {
        // Where the occurrence fell on the monotonic clock, for `scheduledAt` and lateness.
        let scheduledAt = min(now, saturatingSubtract(now, saturatingSubtract(clocks.wall, clock.anchor)))
        var fire = Fire(node: node, epoch: node.epoch, missed: 0, scheduledAt: scheduledAt)
        fire.wall = clocks.wall
        guard clock.isCalendar else {
            fire.occurrence = clock.anchor
            return fire
        }
        switch clock.phase {
        case .moved:
            return fire  // A moved call answers no occurrence.
        case .occurrence, .resumed, .stepped:
            fire.occurrence = clock.anchor
        }
        if node.policy == .burst, Int(node.catchUp) < MissedTickPolicy.maximumBurst {
            node.catchUp += 1  // Back to 0 once a call returns with the next occurrence still ahead.
        } else {
            node.catchUp = 0
            fire.work = .catchUp
        }
        return fire
    }

    /// The clocks moved against each other (a step, a suspend, or the engine's wall-clock timer
    /// fired): re-estimates every pending bound timer. Returns whether the loop must be woken.
    package mutating func rebase(now: Int64) -> Bool {
        guard !self.bound.isEmpty else { return false }
        let clocks = self.readings(now)
        var wake = false
        for node in self.bound.values where node.state == .pending {
            let clock = node.clock!
            if clock.isCalendar, clock.phase == .resumed || clock.phase == .stepped { continue }  // Due now.
            var estimate = clock.resolve(estimate: node.deadline, clocks).estimate
            if clock.isCalendar, clock.phase == .occurrence,
                estimate > saturatingAdd(node.deadline, ClockBinding.offsetNoise)
            {
                // Stepped back: the loop checks at once whether the schedule starts afresh.
                clock.phase = .stepped
                estimate = now
            }
            guard estimate != node.deadline else { continue }
            self.heap.remove(node)
            node.deadline = estimate
            wake = self.push(node) || wake
            self.boundVersion &+= 1
        }
        return wake
    }

    /// The earliest deadline of a pending timer on each clock other than the monotonic one:
    /// what the engine arms its `CLOCK_REALTIME` and `CLOCK_BOOTTIME` timerfds at. O(log n)
    /// amortized per change since the last call (``BoundDeadlines``).
    package mutating func earliestBoundDeadlines() -> (wall: Int64?, continuous: Int64?) {
        self.boundDeadlines.earliest(in: self.bound)
    }

    /// The entries ``earliestBoundDeadlines()`` and the bound timers' changes have added or looked
    /// at so far (for tests: the work a change costs, counted).
    package var boundDeadlineWork: Int { self.boundDeadlines.work }

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
    /// loop saw (unlike ``peek()``); early entries are filed again first (``settleHead()``).
    package mutating func earliestPendingDeadline() -> Int64? {
        self.settleHead()
        return self.heap.min?.deadline
    }

    /// The key of the heap's earliest entry as it was filed, which a lazy extension may have left
    /// early (for tests: a later reschedule moved nothing in the heap).
    package var earliestFiledDeadline: Int64? { self.heap.min?.deadline }

    /// The slots of the ID table and the entries of the heap's storage (for tests: memory kept).
    package var capacities: (table: Int, heap: Int) { (self.timers.capacity, self.heap.capacity) }

    /// The number of heap entries (for tests: one per pending timer).
    package var heapCount: Int { self.heap.count }

    /// The pending timers gathered into the heap's due run (for tests).
    package var dueRunCount: Int { self.heap.dueRunCount }

    /// The timers waiting in the heap's far tier (tests).
    package var farCount: Int { self.heap.farCount }

    /// The number of registered timers.
    package var count: Int { self.timers.count }

    /// Appends the IDs of every registered timer.
    package func appendIDs(to ids: inout [TimerID]) {
        self.timers.forEachNode { ids.append($0.id) }
    }
}
