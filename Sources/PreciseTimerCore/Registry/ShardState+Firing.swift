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
    package mutating func next(now: Int64, notAfter limit: Int64 = .max, isFresh: Bool = true) -> Next {
        var now = now
        var isFresh = isFresh
        while true {
            guard let entry = self.heap.min else {
                self.loopLooksAt = .none
                return .idle(nil)
            }
            guard entry.deadline <= now, entry.deadline <= limit else {
                self.loopLooksAt = Head(deadline: entry.deadline, sequence: entry.sequence)
                return .idle(entry.deadline)
            }
            // A storm is served from a run gathered in one pass (see ``TimerHeap``).
            self.heap.gatherDue(notAfter: min(now, limit))
            let node = self.heap.removeMin()!
            self.prefetchRun()
            if !isFresh, node.interval > 0 || node.clock != nil {
                now = max(now, self.clocks?.now() ?? monotonicNanoseconds())
                isFresh = true
            }
            if let clock = node.clock {
                // An estimate came due: the timer's own clock decides (see ``ClockBinding``).
                let clocks = self.readings(now)
                let (due, estimate) = clock.resolve(estimate: node.deadline, clocks)
                node.deadline = estimate
                guard due else {
                    node.deadline = max(node.deadline, saturatingAdd(now, 1))
                    self.heap.insert(node)
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

    /// While the heap serves a due run, starts loading what this shard's next fires touch: the
    /// run's entries a few places on, the node after next (its two or three cache lines), and,
    /// from the next node (loaded by the previous call), its table slot and its handler's
    /// closure context. In a storm the loop comes back to this shard only after serving the
    /// others, so the memory has arrived by then; without it, every fire waits for each of these
    /// misses in series (a storm of 100 000 took about 15 % longer without these hints). Hints
    /// only: nothing is dereferenced but the next node, which the run holds (and the table owns)
    /// under the shard's lock.
    @inline(__always)
    func prefetchRun() {
        guard let driver = self.clocks, let next = self.heap.runNode(ahead: 0) else { return }
        driver.prefetch(address: self.heap.runEntryAddress(ahead: 4))
        if let after = self.heap.runNode(ahead: 1) {
            driver.prefetch(node: UInt(bitPattern: after.toOpaque()))
        }
        next._withUnsafeGuaranteedRef { driver.prefetch(handlerOf: $0, slotIn: self.timers) }
    }

    /// The loop looks at this shard: returns the earliest pending timer (``Head/none`` when none is pending). Until the next `peek`, a
    /// timer that comes before it makes ``add(_:)`` (and every other push) ask for a wake-up.
    package mutating func peek() -> Head {
        self.loopLooksAt =
            self.heap.min.map {
                Head(deadline: $0.deadline, sequence: $0.sequence, address: UInt(bitPattern: $0.node.toOpaque()))
            }
            ?? .none
        return self.loopLooksAt
    }

    /// ``next(now:notAfter:isFresh:)`` and, for a timer whose handler runs right here on the loop (no hop), its
    /// ``begin(_:)`` under the same lock. Returns the call to make, if any.
    package mutating func nextOnLoop(now: Int64, notAfter limit: Int64 = .max, isFresh: Bool = true) -> (Next, Call?) {
        let next = self.next(now: now, notAfter: limit, isFresh: isFresh)
        guard case .fire(let fire) = next, fire.node.queue == nil else { return (next, nil) }
        return (next, self.begin(fire))
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
    package mutating func begin(_ fire: Fire) -> Call? {
        let node = fire.node
        guard node.era == self.era, node.state == .taken, node.epoch == fire.epoch, node.handler != nil
        else { return nil }
        node.count += 1
        guard node.repeats else {
            self.timers.remove(node.id, hash: node.hash)
            self.forget(node)
            node.state = .ended
            return Call(handler: Self.moveHandler(out: node)!, count: node.count)
        }
        node.state = .running
        return Call(handler: node.handler!, count: node.count)
    }

    /// A repeating timer's handler returned at `firedAt` (the tick's instant): arm its next
    /// deadline unless it was cancelled meanwhile, or park it if it was paused. Returns whether
    /// the loop must be woken, and the handler to release outside the lock if the timer ended.
    package mutating func complete(
        _ fire: Fire, firedAt: Int64, now: Int64
    ) -> (wake: Bool, ended: (@Sendable (Tick) -> Void)?) {
        let node = fire.node
        guard node.era == self.era, node.state == .running else { return (false, nil) }
        var next: Int64
        if node.isRescheduled {
            next = node.deadline
            node.isRescheduled = false
            self.retarget(node, to: next, now: now)
        } else if let clock = node.clock, let schedule = clock.schedule {
            guard let occurrence = schedule.next(after: WallClockInstant(nanosecondsSinceEpoch: clock.anchor)) else {
                // The schedule has no occurrence left: the timer ends as a fired one-shot does.
                self.timers.remove(node.id, hash: node.hash)
                self.forget(node)
                node.state = .ended
                return (false, Self.moveHandler(out: node))
            }
            clock.anchor = occurrence.nanosecondsSinceEpoch
            self.boundVersion &+= 1
            next = clock.resolve(estimate: node.deadline, self.readings(now)).estimate
        } else if node.policy == .delay, fire.missed > 0 {
            // A period was missed: the grid restarts after this call (at the clock's end: never).
            next = saturatingAdd(firedAt, node.interval)
        } else {
            let (sum, overflow) = node.deadline.addingReportingOverflow(node.interval)
            guard !overflow else {
                // Past the clock's range (centuries of uptime): the timer cannot fire again.
                self.timers.remove(node.id, hash: node.hash)
                self.forget(node)
                node.state = .ended
                return (false, Self.moveHandler(out: node))
            }
            next = sum
        }
        if node.pauseWhenDone {
            node.pauseWhenDone = false
            node.deadline = max(0, next - now)
            node.state = .paused
            return (false, nil)
        }
        node.deadline = next
        return (self.push(node), nil)
    }
}
