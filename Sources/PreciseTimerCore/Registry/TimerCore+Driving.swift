import Dispatch
import Synchronization

extension TimerCore {
    // MARK: Driving

    /// Runs the timers due now, in deadline order, up to ``batchLimit`` of them.
    ///
    /// The clock is read once per fire: a timer due by the last reading (the previous call's
    /// instant) is due now, so the clock is read again only when the earliest timer is not due
    /// by it. Handlers on ``TimerExecutor/loop`` run inline on the caller's thread; others are queued.
    /// Calls are serialized by whatever drives the core (its loop thread, its alarm queue, or
    /// the virtual-time service's `advance`), which alone touches the loop's view of the shards.
    ///
    /// - Parameter limit: Run no timer whose deadline is after it (see ``ShardState/next(now:notAfter:isFresh:seen:)``).
    package func runDue(notAfter limit: Int64 = .max) -> Outcome {
        self.sleepsUntil.store(.min, ordering: .sequentiallyConsistent)  // Running: pushes need not ring.
        var woke = false
        // Calls on the loop are counted in flight (``InFlightCalls``) once per pass, not once
        // each: the first as it begins, under its shard's lock, and the count is let go when the
        // pass returns, so it covers every later call of the pass, two atomic operations a pass
        // instead of two a call. Once the registry is closed no call begins, so the count still
        // only goes up under a lock as a call begins.
        var counted = false
        defer {
            if counted { self.inFlight.leave() }
            if woke { self.wokeUp() }
        }
        // The last clock reading, and whether it was taken for the fire about to be served (no
        // fire has used it yet). A head due by it is due now.
        var now = Int64.min
        var isFresh = false
        for _ in 0..<Self.batchLimit {
            self.refreshDirtyHeads()
            let (index, head) = self.heads.earliest()
            if head != .none, head.deadline > now {
                now = self.doorbell.now()
                isFresh = true
            }
            // `.none` is no timer, even when the clock stands at the end of its range.
            guard head != .none, head.deadline <= now, head.deadline <= limit else {
                self.shrinkSparseTables()
                // About to sleep: publish until when, then look for a push that did not ring.
                self.sleepsUntil.store(head.deadline, ordering: .sequentiallyConsistent)
                guard self.dirty.load(ordering: .sequentiallyConsistent) == 0 else {
                    self.sleepsUntil.store(.min, ordering: .sequentiallyConsistent)
                    continue
                }
                return head == .none ? .empty : .idle(until: head.deadline)
            }
            // What the loop saw of this shard may have been cancelled or moved later since: the
            // shard hands over a timer only if it does not come after `head`, so after every
            // other shard's head.
            // A plain one-shot (most of a storm) is taken and begun in one step; anything else
            // goes the general way, under the same lock. What it takes is written out here, not
            // returned: a large result crosses the lock's generic `withLock` by copy.
            var plain: ShardState.PlainFire? = nil
            var next = ShardState.Next.idle(nil)
            var call: ShardState.Call? = nil
            let (newHead, sparse) = self.withLockedShard(index) { registry in
                if let taken = registry.nextPlainOnLoop(now: now, notAfter: limit, seen: head) {
                    plain = consume taken
                } else {
                    (next, call) = registry.nextOnLoop(now: now, notAfter: limit, isFresh: isFresh, seen: head)
                }
                // Counted as it begins, under the lock, like a queue hop (see `counted`).
                if !counted, plain != nil || call != nil {
                    self.inFlight.enter()
                    counted = true
                }
                return (registry.peek(), registry.timers.isSparse)
            }
            self.heads[index] = newHead
            if sparse { self.heads.sparseTables |= 1 << UInt64(index) }
            isFresh = false
            if let plain = plain.take() {
                woke = true
                Prefetch.line(at: self.heads.earliest().head.address)
                now = self.invoke(plain, shard: index)
                continue
            }
            // Consumed, not copied: a copy of a fire retains and releases its node, two atomic
            // operations per fire of a storm.
            guard case .fire(var taken) = consume next else { continue }  // The head had gone stale.
            woke = true
            if taken.work != .call {
                // A calendar timer whose schedule must be asked first, here, outside the lock.
                guard self.askSchedule(&taken, shard: index) else { continue }
                if taken.node.queue == nil {
                    let fire = taken
                    let call = self.withLockedShard(index) { registry -> ShardState.Call? in
                        let call = registry.begin(fire)
                        if !counted, call != nil {
                            self.inFlight.enter()
                            counted = true
                        }
                        return call
                    }
                    guard let call else { continue }
                    now = self.invoke(call, for: fire, onLoop: true)
                    continue
                }
            }
            let fire = consume taken
            // The next timer's node starts loading while this one runs (a storm's nodes are cold).
            Prefetch.line(at: self.heads.earliest().head.address)
            if let queue = fire.node.queue {
                if self.hopsSynchronously {
                    queue.sync { self.hop(fire) }
                } else {
                    queue.async { self.hop(fire) }
                }
            } else if let call {
                now = self.invoke(call, for: fire, onLoop: true)
            }
        }
        return .batchLimitReached
    }

    /// Asks a taken calendar timer's schedule what its ``ShardState/Work`` needs, outside every
    /// lock (a schedule is user code), and commits the answer. Returns whether a call follows:
    /// a catch-up leaves `fire` answering the latest passed occurrence; a review puts the timer
    /// back in the heap (or ends it) and calls nothing.
    func askSchedule(_ fire: inout ShardState.Fire, shard index: Int) -> Bool {
        self.shards[index].assertNotHeld()  // A schedule is user code.
        let schedule = fire.node.clock!.schedule!
        let anchor = fire.occurrence!  // Every review and catch-up is taken with its occurrence.
        let first: ShardState.Upcoming
        var second: ShardState.Upcoming?
        switch fire.work {
        case .call:
            return true
        case .catchUp:
            guard
                let catchUp = schedule.occurrences(
                    after: WallClockInstant(nanosecondsSinceEpoch: anchor),
                    notAfter: WallClockInstant(nanosecondsSinceEpoch: fire.wall))
            else { return true }
            let latest = catchUp.latest.nanosecondsSinceEpoch
            guard latest > anchor, latest <= fire.wall, catchUp.passed > 0 else {
                let ended = self.withLockedShard(index) { $0.endBroken(fire) }
                self.scheduleBroke(fire, ended: ended, asked: anchor, answered: latest)
                return false
            }
            fire.missed = catchUp.passed
            fire.scheduledAt = saturatingAdd(fire.scheduledAt, latest - anchor)
            fire.occurrence = latest
            return true
        case .resume:
            first = ShardState.Upcoming(asking: schedule, after: fire.wall)
        case .restartCheck:
            first = ShardState.Upcoming(asking: schedule, after: fire.wall)
            if let next = first.next, next < anchor, first.isValid {
                second = ShardState.Upcoming(asking: schedule, after: next)
            }
        }
        let now = self.doorbell.now()
        let (ended, broken, head) = self.withLockedShard(index) { registry in
            let (ended, broken) = registry.commitReview(fire, first: first, second: second, now: now)
            return (ended, broken, registry.peek())
        }
        self.heads[index] = head  // On the loop: its view of the shard is up to date.
        if let broken {
            self.scheduleBroke(fire, ended: ended, asked: broken.after, answered: broken.next ?? .min)
        } else if ended != nil {
            withExtendedLifetime(ended) {}
            self.instruments.ended(1)
        }
        return false
    }

    /// A calendar timer's schedule answered an occurrence that is not after the instant it was
    /// asked about: its timer ended (when `ended` holds its handler). Logged and counted.
    func scheduleBroke(_ fire: ShardState.Fire, ended: (@Sendable (Tick) -> Void)?, asked: Int64, answered: Int64) {
        guard ended != nil else { return }  // Cancelled, paused or moved meanwhile: nothing ended here.
        withExtendedLifetime(ended) {}
        self.instruments.scheduleBroke(
            fire.node.id, schedule: fire.node.clock?.schedule, asked: asked, answered: answered)
        self.instruments.ended(1)
    }

    /// Shrinks the tables the loop left sparse as it ended one-shots (see
    /// ``TimerTable/remove(_:hash:shrinking:)``), once nothing is due: after a storm, not during it.
    func shrinkSparseTables() {
        var mask = self.heads.sparseTables
        guard mask != 0 else { return }
        self.heads.sparseTables = 0
        while mask != 0 {
            let index = mask.trailingZeroBitCount
            mask &= mask - 1
            self.withLockedShard(index) { $0.timers.shrinkIfSparse() }
        }
    }

    /// Looks again at the shards that were pushed ahead of what the loop saw.
    @inline(__always)
    func refreshDirtyHeads() {
        guard self.dirty.load(ordering: .relaxed) != 0 else { return }
        var mask = self.dirty.exchange(0, ordering: .acquiring)
        while mask != 0 {
            let index = mask.trailingZeroBitCount
            mask &= mask - 1
            self.heads[index] = self.withLockedShard(index) { $0.peek() }
        }
    }

    /// Runs a fire that hopped to its queue. Its call begins here, under the lock, so a cancel
    /// (or pause, or reschedule) that returned while the fire waited in the queue prevents it.
    /// The call is counted in ``inFlight`` as it begins, under the same lock, so a close that
    /// follows sees it.
    func hop(_ fire: ShardState.Fire) {
        let call = self.withLockedShard(Int(fire.node.shard)) { registry -> ShardState.Call? in
            let call = registry.begin(fire)
            if call != nil { self.inFlight.enter() }
            return call
        }
        guard let call else { return }
        defer { self.inFlight.leave() }
        self.invoke(call, for: fire, onLoop: false)
    }

    /// Calls a handler and, for a repeating timer, arms its next deadline. On the loop, the
    /// loop's view of the shard is brought up to date at once; elsewhere (a queue hop) the loop
    /// is woken if the next deadline comes before what it saw.
    ///
    /// - Returns: The last clock reading this made: when the call began (the tick's `firedAt`)
    ///   for a one-shot, when it returned for a repeating timer.
    @discardableResult
    func invoke(_ call: ShardState.Call, for fire: ShardState.Fire, onLoop: Bool) -> Int64 {
        // No lock around user code (the handler, then a calendar timer's schedule).
        self.shards[Int(fire.node.shard)].assertNotHeld()
        let firedAt = self.doorbell.now()
        self.instruments.willCall(fire, firedAt: firedAt)
        call.handler(
            Tick(
                of: fire.node, count: call.count, missed: fire.missed,
                scheduledAt: MonotonicInstant(nanoseconds: fire.scheduledAt),
                firedAt: MonotonicInstant(nanoseconds: firedAt),
                wallClockDeadline: fire.occurrence.map(WallClockInstant.init(nanosecondsSinceEpoch:)),
                tolerance: .nanoseconds(fire.node.coalescing))
        )
        self.instruments.didCall(fire, firedAt: firedAt, clock: self.doorbell)
        guard fire.node.repeats else { return firedAt }
        // A calendar timer's next occurrence, asked here, outside the lock: after the occurrence
        // this call answered, or after the wall clock's now for a moved call.
        var upcoming: ShardState.Upcoming?
        if let schedule = fire.node.clock?.schedule {
            upcoming = ShardState.Upcoming(asking: schedule, after: fire.occurrence ?? self.doorbell.wallClockNow())
        }
        let now = self.doorbell.now()
        let shard = Int(fire.node.shard)
        let (wake, ended, broken, head, deadline) = self.withLockedShard(shard) { registry in
            let (wake, ended, broken) = registry.complete(fire, firedAt: firedAt, now: now, upcoming: upcoming)
            return (wake, ended, broken, onLoop && wake ? registry.peek() : nil, fire.node.fireAt)
        }
        if broken, let upcoming {
            self.scheduleBroke(fire, ended: ended, asked: upcoming.after, answered: upcoming.next ?? .min)
        } else {
            withExtendedLifetime(ended) {}
            if ended != nil { self.instruments.ended(1) }
        }
        if let head {
            self.heads[shard] = head
        } else if wake {
            self.wakeLoop(for: shard, deadline: deadline)
        }
        return now
    }

    /// Calls a plain one-shot's handler (see ``ShardState/nextPlainOnLoop(now:notAfter:seen:)``)
    /// and lets go of it and of the node once it returns, outside every lock, as
    /// ``invoke(_:for:onLoop:)`` does for a one-shot. Returns the instant the call began.
    @inline(__always)
    func invoke(_ plain: consuming ShardState.PlainFire, shard index: Int) -> Int64 {
        self.shards[index].assertNotHeld()  // No lock around user code.
        let node = plain.node
        let firedAt = self.doorbell.now()
        self.instruments.willCall(plainScheduledAt: node.deadline, firedAt: firedAt)
        plain.handler.body(
            Tick(
                of: node, count: 1, missed: 0, scheduledAt: MonotonicInstant(nanoseconds: node.deadline),
                firedAt: MonotonicInstant(nanoseconds: firedAt), wallClockDeadline: nil, tolerance: .zero))
        self.instruments.didCallOnLoop(node, firedAt: firedAt, clock: self.doorbell)
        return firedAt
    }

    /// The earliest deadline of a pending (not paused) timer, if any: a pure read, shard by shard
    /// under each one's lock. It runs nothing and changes nothing the loop relies on.
    package var earliestDeadline: MonotonicInstant? {
        var earliest: Int64?
        for shard in self.shards {
            if let deadline = shard.withLock({ $0.earliestPendingDeadline() }) {
                earliest = min(earliest ?? .max, deadline)
            }
        }
        return earliest.map(MonotonicInstant.init(nanoseconds:))
    }
}
