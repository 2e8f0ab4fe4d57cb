extension ShardState {
    // MARK: Firing

    /// Pops the next due timer at `now` and applies its missed-tick policy, or reports the
    /// earliest deadline when nothing is due. Called by the loop only.
    ///
    /// - Parameters:
    ///   - limit: Deadlines after it are not due even if `now` passed them (virtual time: a
    ///     handler that moved the clock past the instant an `advance` goes to).
    ///   - isFresh: `false` when `now` is a reading the loop kept from an earlier fire (a storm
    ///     reads the clock once per fire, not twice). A timer due then is due now, so it decides
    ///     what is due and serves a one-shot; a repeating or clock-bound timer, whose next
    ///     deadline depends on the time, is taken at a new reading of the shard's clock.
    ///   - seen: The head the loop saw here, the earliest of every shard as it sees them: a timer
    ///     is taken only if it does not come after it in firing order. When the head the loop saw
    ///     has since been cancelled or moved later, the shard's next timer may come after another
    ///     shard's head: the result is then `.idle` with this shard's earliest deadline, and the
    ///     loop, its view updated, serves the earliest shard first.
    package mutating func next(
        now: Int64, notAfter limit: Int64 = .max, isFresh: Bool = true, seen: Head = .none
    ) -> Next {
        var now = now
        var isFresh = isFresh
        while true {
            self.settleHead()
            guard let entry = self.heap.min else {
                self.loopLooksAt = .none
                return .idle(nil)
            }
            // The loop came here for the head it last saw, which may since have been cancelled or
            // moved later: a head after it may come after another shard's, which fires first.
            guard entry.deadline <= now, entry.deadline <= limit,
                !(seen < Head(deadline: entry.deadline, sequence: entry.sequence))
            else {
                self.loopLooksAt = Head(deadline: entry.deadline, sequence: entry.sequence)
                return .idle(entry.deadline)
            }
            // A storm is served from a run gathered in one pass (see ``TimerHeap``).
            self.heap.gatherDue(notAfter: min(now, limit))
            let node = self.heap.removeMin()!
            if !isFresh, node.interval > 0 || node.clock != nil {
                now = max(now, self.clocks?.now() ?? monotonicNanoseconds())
                isFresh = true
            }
            if let clock = node.clock {
                let clocks = self.readings(now)
                if clock.isCalendar, clock.phase == .resumed || clock.phase == .stepped {
                    // The schedule must be asked before anything else (see ``ClockBinding/Phase``).
                    node.state = .taken
                    var fire = Fire(node: node, epoch: node.epoch, missed: 0, scheduledAt: node.deadline)
                    fire.work = clock.phase == .resumed ? .resume : .restartCheck
                    fire.occurrence = clock.anchor
                    fire.wall = clocks.wall
                    self.loopLooksAt = .running
                    return .fire(fire)
                }
                // An estimate came due: the timer's own clock decides (see ``ClockBinding``).
                let previous = node.deadline
                let (due, estimate) = clock.resolve(estimate: node.deadline, clocks)
                node.deadline = estimate
                guard due else {
                    if clock.isCalendar, clock.phase == .occurrence,
                        estimate > saturatingAdd(previous, ClockBinding.offsetNoise)
                    {
                        // Stepped back since it was estimated, and nothing told the registry.
                        clock.phase = .stepped
                        node.deadline = now
                    } else {
                        node.deadline = max(node.deadline, saturatingAdd(now, 1))
                    }
                    self.heap.insert(node)
                    self.boundDeadlines.noteInserted(node, bound: self.bound)
                    continue
                }
                node.deadline = min(node.deadline, now)
                self.loopLooksAt = .running
                return .fire(self.take(node, now: now, clocks: clocks))
            }
            self.loopLooksAt = .running
            return .fire(self.take(node, now: now))
        }
    }

    /// The loop's common case in one step: when the next timer in firing order is a plain
    /// one-shot (no ``TimerNode/Options``: on the loop, on the monotonic clock, no tolerance) and
    /// is due, takes it, begins its call and ends it, as ``nextOnLoop(now:notAfter:isFresh:seen:)``
    /// would through ``next(now:notAfter:isFresh:seen:)``, ``take(_:now:clocks:)`` and
    /// ``begin(_:onLoop:)``, without building a ``Fire``, a ``Next`` and a ``Call`` to move
    /// between them. Returns `nil` for any other timer, or when none is due: the loop then goes
    /// the general way, and nothing changed here that the general way would not change too
    /// (early entries filed again, a due run gathered).
    @inline(__always)
    package mutating func nextPlainOnLoop(
        now: Int64, notAfter limit: Int64, seen: Head
    ) -> PlainFire? {
        self.settleHead()
        guard let entry = self.heap.min, entry.deadline <= now, entry.deadline <= limit,
            !(seen < Head(deadline: entry.deadline, sequence: entry.sequence)),
            entry.node._withUnsafeGuaranteedRef({
                // A pending node of this era always has its handler (only an end takes it).
                $0.options == nil && $0.era == self.era && $0.state == .pending && $0.handlerAddress != 0
            })
        else { return nil }
        self.heap.gatherDue(notAfter: min(now, limit))
        // The table's reference becomes the fire's, kept unmanaged until it is stored: a strong
        // local reference outlives the calls below, which costs a retain and a release per fire
        // (and so did calling the table from inside a closure: the table's).
        let first = self.heap.removeMinUnretained()!
        let hash = first._withUnsafeGuaranteedRef { $0.hash }
        let node = self.timers.removeOwned(nodeAt: UInt(bitPattern: first.toOpaque()), hash: hash, shrinking: false)!
        self.prefetchRun()
        self.loopLooksAt = .running
        let handler = node._withUnsafeGuaranteedRef { node in
            node.count = 1
            node.state = .ended
            return Self.moveStoredHandler(out: node)!
        }
        return PlainFire(node: node.takeRetainedValue(), handler: handler)
    }

    /// While the heap serves a due run, starts loading what this shard's next fires touch: the
    /// run's entries a few places on, the node after next (its two or three cache lines), and,
    /// from the next node (loaded by the previous call), its table slot and its handler's
    /// closure context. In a storm the loop comes back to this shard only after serving the
    /// others, so the memory has arrived by then; without it, every fire waits for each of these
    /// misses in series. Hints only: nothing is dereferenced but the next node, which the run
    /// holds (and the table owns) under the shard's lock.
    @inline(__always)
    func prefetchRun() {
        guard let next = self.heap.runNode(ahead: 0) else { return }
        Prefetch.line(at: self.heap.runEntryAddress(ahead: 4))
        if let after = self.heap.runNode(ahead: 1) {
            Prefetch.node(at: UInt(bitPattern: after.toOpaque()))
        }
        // Not `Prefetch.handler(of:slotIn:)`: wrapping `self.timers` in its optional parameter
        // retains and releases the table, about 45 instructions per fire of a storm.
        next._withUnsafeGuaranteedRef { node in
            Prefetch.line(at: self.timers.slotAddress(hash: node.hash))
            Prefetch.line(at: node.handlerContextAddress)
        }
    }

    /// The loop looks at this shard: returns the earliest pending timer (``Head/none`` when none is pending). Until the next `peek`, a
    /// timer that comes before it makes ``add(_:)`` (and every other push) ask for a wake-up.
    package mutating func peek() -> Head {
        self.settleHead()
        self.loopLooksAt =
            self.heap.min.map {
                Head(deadline: $0.deadline, sequence: $0.sequence, address: UInt(bitPattern: $0.node.toOpaque()))
            }
            ?? .none
        return self.loopLooksAt
    }

    /// Files the heap's earliest entries again while they are early: entries a lazy extension
    /// left behind (see ``reschedule(_:hash:to:now:)``). Afterwards the earliest entry's deadline
    /// is its timer's.
    mutating func settleHead() {
        while let entry = self.heap.min, self.refile(entry) {}
    }

    /// If `entry` (the heap's earliest) is early for its timer, files the timer again at its own
    /// deadline and returns `true`.
    @inline(__always)
    private mutating func refile(_ entry: TimerHeap.Entry) -> Bool {
        let fireAt = entry.node._withUnsafeGuaranteedRef { $0.fireAt }
        guard fireAt > entry.deadline else { return false }
        let node = self.heap.removeMin()!
        self.heap.insert(node)
        return true
    }

    /// ``next(now:notAfter:isFresh:seen:)`` and, for a timer whose handler runs right here on the loop (no hop), its
    /// ``begin(_:onLoop:)`` under the same lock, hinting what the shard's next fires touch
    /// (``prefetchRun()``). Returns the call to make, if any.
    package mutating func nextOnLoop(
        now: Int64, notAfter limit: Int64 = .max, isFresh: Bool = true, seen: ShardState.Head = .none
    ) -> (Next, Call?) {
        // Consumed and rebuilt, not bound by copy: a copy of the fire retains and releases its node.
        let next = self.next(now: now, notAfter: limit, isFresh: isFresh, seen: seen)
        switch consume next {
        case .fire(let fire):
            self.prefetchRun()
            guard fire.node.queue == nil, fire.work == .call else { return (.fire(fire), nil) }
            let call = self.begin(fire, onLoop: true)
            return (.fire(fire), call)
        case .idle(let deadline):
            return (.idle(deadline), nil)
        }
    }

    mutating func take(_ node: TimerNode, now: Int64, clocks: ClockBinding.Readings? = nil) -> Fire {
        node.state = .taken
        if let clock = node.clock, clock.kind == .wall, let clocks {
            return self.takeWallClock(node, clock, now: now, clocks: clocks)
        }
        guard node.interval > 0 else {
            return Fire(node: node, epoch: node.epoch, missed: 0, scheduledAt: node.deadline)
        }
        let deadline = node.deadline
        let periodsLate = UInt64((now - deadline) / node.interval)
        switch node.policy {
        case .burst where periodsLate == 0:
            node.catchUp = 0
            return Fire(node: node, epoch: node.epoch, missed: 0, scheduledAt: deadline)
        case .burst where Int(node.catchUp) < MissedTickPolicy.maximumBurst:
            node.catchUp += 1
            return Fire(node: node, epoch: node.epoch, missed: 0, scheduledAt: deadline)
        case .skip, .burst, .delay:
            // Answer the latest grid point that passed. `.skip` (and a `.burst` out of catch-up
            // calls) goes on from there; `.delay` restarts after the call (``complete``).
            node.catchUp = 0
            node.deadline = deadline + Int64(periodsLate) * node.interval
            return Fire(node: node, epoch: node.epoch, missed: periodsLate, scheduledAt: node.deadline)
        }
    }

    /// The call of a taken timer begins: returns its handler and count, or `nil` if the timer was
    /// cancelled, paused or rescheduled since it was taken (then nothing runs). A one-shot leaves
    /// the registry here, so its handler may reuse the ID, and the service lets go of the handler
    /// once the call returns.
    ///
    /// - Parameter onLoop: Called by the loop, which shrinks a sparse table once it goes idle
    ///   (see ``TimerTable/remove(_:hash:shrinking:)``): a one-shot's end leaves it as it is.
    package mutating func begin(_ fire: Fire, onLoop: Bool = false) -> Call? {
        let node = fire.node
        guard node.era == self.era, node.state == .taken, node.epoch == fire.epoch, node.handler != nil
        else { return nil }
        if let clock = node.clock, clock.isCalendar, let occurrence = fire.occurrence {
            clock.anchor = occurrence  // A catch-up's latest occurrence is the one answered now.
        }
        node.count += 1
        guard node.repeats else {
            return Call(handler: self.endTaken(node, shrinkingTable: !onLoop)!, count: node.count)
        }
        node.state = .running
        return Call(handler: node.handler!, count: node.count)
    }

    /// A repeating timer's handler returned at `firedAt` (the tick's instant): arm its next
    /// deadline unless it was cancelled meanwhile, or park it if it was paused. Returns whether
    /// the loop must be woken, and the handler to release outside the lock if the timer ended.
    ///
    /// - Parameter upcoming: For a calendar timer, its schedule's answer, asked outside the lock
    ///   (``Upcoming``).
    package mutating func complete(
        _ fire: Fire, firedAt: Int64, now: Int64, upcoming: Upcoming? = nil
    ) -> (wake: Bool, ended: (@Sendable (Tick) -> Void)?, broken: Bool) {
        let node = fire.node
        guard node.era == self.era, node.state == .running else { return (false, nil, false) }
        var next: Int64
        if node.isRescheduled {
            next = node.deadline
            node.isRescheduled = false
            self.retarget(node, to: next, now: now)
        } else if let clock = node.clock, clock.isCalendar {
            guard let upcoming, let occurrence = upcoming.next else {
                // The schedule has no occurrence left: the timer ends as a fired one-shot does.
                assert(upcoming != nil, "ShardState.complete: a calendar timer's schedule was not asked")
                return (false, self.endTaken(node), false)
            }
            guard upcoming.isValid else { return (false, self.endTaken(node), true) }
            clock.anchor = occurrence
            clock.phase = .occurrence
            self.boundVersion &+= 1
            let (due, estimate) = clock.resolve(estimate: node.deadline, self.readings(now))
            if !due { node.catchUp = 0 }  // A `.burst` is caught up.
            next = estimate
        } else if node.policy == .delay, fire.missed > 0 {
            // A period was missed: the grid restarts after this call (at the clock's end: never).
            next = saturatingAdd(firedAt, node.interval)
        } else {
            let (sum, overflow) = node.deadline.addingReportingOverflow(node.interval)
            guard !overflow else {
                // Past the clock's range (centuries of uptime): the timer cannot fire again.
                return (false, self.endTaken(node), false)
            }
            next = sum
        }
        if node.pauseWhenDone {
            node.pauseWhenDone = false
            node.deadline = max(0, next - now)
            node.state = .paused
            return (false, nil, false)
        }
        node.deadline = next
        return (self.push(node), nil, false)
    }

    /// A calendar timer's schedule, asked outside the lock for the occurrence after `after`.
    package struct Upcoming: Sendable {
        /// The instant the schedule was asked about.
        package let after: Int64
        /// Its answer (`nil`: no occurrence left).
        package let next: Int64?

        package init(after: Int64, next: Int64?) {
            self.after = after
            self.next = next
        }

        /// Asks `schedule` for its occurrence after `after` (user code: never under the lock).
        package init(asking schedule: any WallClockSchedule, after: Int64) {
            self.init(
                after: after,
                next: schedule.next(after: WallClockInstant(nanosecondsSinceEpoch: after))?.nanosecondsSinceEpoch)
        }

        /// Whether the answer is at least ``TimerService/minimumInterval`` after the instant
        /// asked about: a schedule that answers the same instant, an earlier one, or one too close
        /// would fire one occurrence over and over.
        package var isValid: Bool {
            guard let next else { return true }
            return saturatingSubtract(next, self.after) >= TimerLimits.minimumIntervalNanoseconds
        }
    }

    /// Ends a registered timer that is not in the heap (taken or running): it leaves the
    /// registry, and its handler is returned for the caller to release outside the lock.
    mutating func endTaken(_ node: TimerNode, shrinkingTable: Bool = true) -> (@Sendable (Tick) -> Void)? {
        self.timers.remove(node, hash: node.hash, shrinking: shrinkingTable)
        self.forget(node)
        node.state = .ended
        return Self.moveHandler(out: node)
    }

    /// A taken calendar timer's schedule answered (``Work/resume`` or ``Work/restartCheck``):
    /// sets its next occurrence and puts it back in the heap, unless it was cancelled, paused or
    /// moved meanwhile. A schedule with no occurrence left ends the timer; one whose answer is
    /// not after the instant asked about ends it as broken.
    ///
    /// - Parameters:
    ///   - first: The schedule's first occurrence after ``Fire/wall``.
    ///   - second: For a restart check whose `first` comes before the timer's next occurrence,
    ///     the schedule's occurrence after `first`.
    /// - Returns: The handler of a timer that ended (to release outside the lock), and the answer
    ///   that did not advance when it ended because of it. The caller is the loop, which looks
    ///   at the shard again (``peek()``) rather than being woken.
    package mutating func commitReview(
        _ fire: Fire, first: Upcoming, second: Upcoming?, now: Int64
    ) -> (ended: (@Sendable (Tick) -> Void)?, broken: Upcoming?) {
        let node = fire.node
        guard node.era == self.era, node.state == .taken, node.epoch == fire.epoch, let clock = node.clock else {
            return (nil, nil)
        }
        if let broken = [first, second].compactMap({ $0 }).first(where: { !$0.isValid }) {
            return (self.endTaken(node), broken)
        }
        switch fire.work {
        case .resume:
            guard let next = first.next else { return (self.endTaken(node), nil) }
            clock.anchor = next
        case .restartCheck:
            if let next = first.next, let after = second?.next, next < clock.anchor, after < clock.anchor {
                clock.anchor = next
            }
        case .call, .catchUp:
            assertionFailure("ShardState.commitReview: \(fire.work) is not a review")
        }
        clock.phase = .occurrence
        self.boundVersion &+= 1
        node.deadline = clock.resolve(estimate: now, self.readings(now)).estimate
        _ = self.push(node)
        return (nil, nil)
    }

    /// A taken calendar timer's catch-up answer was not after the occurrence it was due for:
    /// ends it (unless it was cancelled, paused or moved meanwhile). Returns its handler.
    package mutating func endBroken(_ fire: Fire) -> (@Sendable (Tick) -> Void)? {
        let node = fire.node
        guard node.era == self.era, node.state == .taken, node.epoch == fire.epoch else { return nil }
        return self.endTaken(node)
    }
}
