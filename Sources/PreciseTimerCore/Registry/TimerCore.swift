import Dispatch
import Synchronization

/// The scheduling logic shared by `PreciseTimer`, `DispatchReferenceTimer`, the
/// virtual-time test service and the tests' manual driver: the registry, sharded into
/// semaphore-guarded ``ShardState`` shards, and running what they say is due in one order.
///
/// It knows nothing of libevent; its ``TimerDriver`` tells it the time and is rung when the
/// loop must look at the heap again. The services wrap it and add their engine's lifecycle.
package final class TimerCore: Sendable {
    /// How many handlers one ``runDue()`` call runs before giving the loop back (so a wake-up,
    /// a shutdown or I/O on the same base is not starved by a storm of due timers).
    package static let batchLimit = 4096

    /// What ``runDue()`` leaves the loop to do.
    package enum Outcome: Equatable, Sendable {
        /// Nothing is due before this deadline: sleep until it.
        case idle(until: Int64)
        /// No timer is pending: sleep until woken.
        case empty
        /// The batch limit cut the run short with timers still due: let the loop serve its other
        /// events, then call again at once.
        case batchLimitReached
    }

    /// Shards of the registry, each with its own semaphore, ID table and heap; a timer lives in
    /// the shard its ID hashes to (``shard(for:)``), so threads scheduling and cancelling
    /// different timers rarely wait for each other, and no single table or heap grows to a
    /// million entries (whose growth would hold one lock for milliseconds).
    private let shards: [TimerShard]
    /// Scheduling order and generations, one counter for every shard: timers due at the same
    /// instant fire in the order they were scheduled, whichever shards they live in. Generated
    /// IDs take their number from it too.
    private let sequence = Atomic<UInt64>(0)
    /// Shards whose head the loop must look at again (bit `k` for shard `k`): set by a thread
    /// that pushed a timer ahead of what the loop saw there.
    private let dirty = Atomic<UInt64>(0)
    /// The deadline the loop sleeps until (`.max`: no timer; `.min`: it is running, or a wake-up
    /// is on its way). A push ahead of a shard's head rings the doorbell only if it also comes
    /// before this, so a timer scheduled into a quiet shard does not wake a loop that sleeps
    /// until an earlier deadline anyway.
    private let sleepsUntil = Atomic<Int64>(.max)
    /// The loop's view of every shard's head (see ``LoopHeads``).
    private let heads: LoopHeads
    /// Makes ``close(_:)`` happen once, and whole (every shard) before anyone sees it closed. A
    /// semaphore rather than a `Mutex`: ThreadSanitizer cannot see `Mutex`'s ordering on Linux.
    private let closing = SemaphoreGuarded(false)
    package let doorbell: any TimerDriver
    /// Whether a fire for a ``TimerExecutor/queue(_:)`` timer waits for its call (virtual time:
    /// `advance` returns only once every call it caused has returned).
    private let hopsSynchronously: Bool
    /// Logging and metrics hooks, each called outside the locks.
    package let instruments: TimerInstruments
    /// Queue hops whose call has begun and not yet returned (a shutdown waits for them).
    package let inFlight = InFlightCalls()
    /// Fires once the core closes.
    package let closeNotice = CloseNotice()
    private let boundChanges: BoundChanges
    /// The ``ProcessGeneration`` of the process that created the core (see ``isInherited``).
    private let processGeneration = ProcessGeneration.current()

    /// Whether this is a child process that inherited the core through `fork()`: its driver does
    /// not exist here and a shard's semaphore may have been copied while held, so the services
    /// touch nothing (``TimerCoreService``).
    package var isInherited: Bool {
        ProcessGeneration.current() != self.processGeneration
    }

    /// The number of shards: a power of two, at most 64 (one bit each in ``dirty``). 64 keeps a
    /// shard of a million timers at ~16 000 (its table and heap grow in well under a
    /// millisecond) and makes two threads meet on a shard's lock once in 64 calls.
    package static let shardCount = 64
    private static let shardShift = UInt64(64 - shardCount.trailingZeroBitCount)

    /// - Parameters:
    ///   - doorbell: The clock and wake-up of whatever drives this core. It must not hold the
    ///     core (the libevent engine holds the core and gives it a separate doorbell).
    ///   - hopsSynchronously: Run queue hops with `sync` instead of `async`.
    ///   - instruments: Where events are logged and counted; none by default.
    package init(
        doorbell: any TimerDriver, hopsSynchronously: Bool = false, instruments: TimerInstruments = .disabled
    ) {
        self.doorbell = doorbell
        self.hopsSynchronously = hopsSynchronously
        self.instruments = instruments
        let boundChanges = BoundChanges()
        self.boundChanges = boundChanges
        self.shards = (0..<Self.shardCount).map { _ in TimerShard(clocks: doorbell, boundChanges: boundChanges) }
        self.heads = LoopHeads(count: Self.shardCount)
    }

    /// The shard of the timer whose ID hashes to `hash` (its top bits; the table uses the low ones).
    @inline(__always)
    private func shard(for hash: UInt64) -> Int {
        Int(truncatingIfNeeded: hash >> Self.shardShift)
    }

    /// A push came before what the loop saw of shard `shard`: marks the shard, and rings the
    /// doorbell if `deadline` also comes before the loop's sleep, once per sleep.
    ///
    /// Race-free with the loop going to sleep (``runDue(notAfter:)``), Dekker-style: the push
    /// marks the shard, then reads the sleep; the loop publishes its sleep, then reads the
    /// marks (all sequentially consistent). Either the loop sees the mark and looks again, or
    /// the push sees the sleep and rings.
    private func wakeLoop(for shard: Int, deadline: Int64) {
        self.dirty.bitwiseOr(1 << UInt64(shard), ordering: .sequentiallyConsistent)
        var sleep = self.sleepsUntil.load(ordering: .sequentiallyConsistent)
        while deadline < sleep {
            let (exchanged, original) = self.sleepsUntil.compareExchange(
                expected: sleep, desired: .min, ordering: .sequentiallyConsistent)
            if exchanged {
                self.doorbell.wake()
                return
            }
            sleep = original
        }
    }

    package var now: MonotonicInstant { MonotonicInstant(nanoseconds: self.doorbell.now()) }

    // MARK: Scheduling

    /// Registers a timer and hands out its identity: the ID, and the generation that only this
    /// timer of this core ever has. Everything built on a service takes the identity from here,
    /// never by looking it up afterwards (by then a one-shot may have fired and its ID been reused).
    ///
    /// - Throws: ``PreciseTimerError/Code/emptyID``, ``PreciseTimerError/Code/reservedID``,
    ///   the trigger's validation errors, ``PreciseTimerError/Code/duplicateID`` and the close reason.
    package func schedule(
        _ trigger: TimerTrigger, id: TimerID?, options: TimerOptions,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws(PreciseTimerError) -> TimerHandle {
        if let id {
            if id.rawValue.isEmpty { throw PreciseTimerError(.emptyID, id: id) }
            if id.isGenerated { throw PreciseTimerError(.reservedID, id: id) }
        }
        let request = try trigger.request(now: self.doorbell.now(), clock: options.clock, driver: self.doorbell, id: id)
        // Built outside the lock: if the registry refuses it, its handler is released out here.
        let node = TimerNode(
            id: id ?? "", deadline: request.deadline, interval: request.interval, options: options,
            clock: request.clock, handler: handler)
        let number = self.sequence.wrappingAdd(1, ordering: .relaxed).newValue
        node.sequence = number
        // A generated name is unique by construction: its number is this timer's generation, and
        // no explicit ID may take the generated form.
        node.name(id ?? TimerID(generatedNumber: number))
        let shard = self.shard(for: node.hash)
        // Counted before it is visible: its fire or cancel may come on another thread at once.
        self.instruments.scheduled()
        let wake: Bool
        do {
            wake = try self.shards[shard].withLock { (registry) throws(PreciseTimerError) in try registry.add(node) }
        } catch {
            self.instruments.refused()
            throw error
        }
        // A timer on another clock always wakes the loop, whatever its deadline: the engine arms
        // its timerfd on that clock at the end of the loop's pass (a daily timer must not wait
        // for some other timer to bring the loop round).
        if wake || request.clock != nil {
            self.wakeLoop(for: shard, deadline: request.clock != nil ? .min : request.deadline)
        }
        return TimerHandle(id: node.id, generation: number)
    }

    // MARK: Control

    @discardableResult
    package func reschedule(_ id: TimerID, after delay: Duration) throws(PreciseTimerError) -> Bool {
        let nanoseconds = try delay.validatedDelay(for: id)
        return self.move(id, to: try TimerRequest.deadline(now: self.doorbell.now(), after: nanoseconds, id: id))
    }

    @discardableResult
    package func reschedule(_ id: TimerID, at deadline: MonotonicInstant) throws(PreciseTimerError) -> Bool {
        self.move(id, to: try TimerRequest.validated(deadline, now: self.doorbell.now(), id: id))
    }

    private func move(_ id: TimerID, to deadline: Int64) -> Bool {
        let now = self.doorbell.now()
        let hash = id.tableHash
        let shard = self.shard(for: hash)
        let (found, wake) = self.shards[shard].withLock { $0.reschedule(id, hash: hash, to: deadline, now: now) }
        if wake { self.wakeLoop(for: shard, deadline: deadline) }
        return found
    }

    @discardableResult
    package func pause(_ id: TimerID) -> Bool {
        let now = self.doorbell.now()
        let hash = id.tableHash
        return self.shards[self.shard(for: hash)].withLock { $0.pause(id, hash: hash, now: now) }
    }

    @discardableResult
    package func resume(_ id: TimerID) -> Bool {
        let now = self.doorbell.now()
        let hash = id.tableHash
        let shard = self.shard(for: hash)
        let (found, wake) = self.shards[shard].withLock { $0.resume(id, hash: hash, now: now) }
        if wake { self.wakeLoop(for: shard, deadline: .min) }  // Its deadline is the shard's business: ring.
        return found
    }

    package func isPaused(_ id: TimerID) -> Bool {
        let hash = id.tableHash
        return self.shards[self.shard(for: hash)].withLock { $0.isPaused(id, hash: hash) }
    }

    // MARK: Cancellation and queries

    @discardableResult
    package func cancel(_ id: TimerID) -> Bool {
        let hash = id.tableHash
        let (found, handler) = self.shards[self.shard(for: hash)].withLock { $0.cancel(id, hash: hash) }
        withExtendedLifetime(handler) {}  // Released here, outside the lock.
        if found { self.instruments.cancelled(1) }
        return found
    }

    @discardableResult
    package func cancel(_ id: TimerID, generation: UInt64) -> Bool {
        let hash = id.tableHash
        let (found, handler) = self.shards[self.shard(for: hash)].withLock {
            $0.cancel(id, hash: hash, generation: generation)
        }
        withExtendedLifetime(handler) {}
        if found { self.instruments.cancelled(1) }
        return found
    }

    package func generation(of id: TimerID) -> UInt64? {
        let hash = id.tableHash
        return self.shards[self.shard(for: hash)].withLock { $0.node(id, hash: hash)?.sequence }
    }

    /// Ends every timer scheduled before the call, shard by shard, each in O(1) under its lock;
    /// handlers are released outside the locks.
    package func cancelAll() {
        for shard in self.shards {
            let swept = shard.withLock { $0.cancelAll() }
            swept.release()
            self.instruments.cancelled(swept.count)
        }
    }

    package func isScheduled(_ id: TimerID) -> Bool {
        let hash = id.tableHash
        return self.shards[self.shard(for: hash)].withLock { $0.node(id, hash: hash) != nil }
    }

    /// Every shard's IDs, each shard's under its own lock (a 64th of the timers at a time).
    package var scheduledIDs: [TimerID] {
        var ids: [TimerID] = []
        ids.reserveCapacity(self.scheduledCount)
        for shard in self.shards {
            shard.withLock { $0.appendIDs(to: &ids) }
        }
        return ids
    }

    /// The sum of the shards' counts, each published as its shard changes: no lock taken.
    package var scheduledCount: Int {
        self.shards.reduce(0) { $0 + $1.count.load(ordering: .relaxed) }
    }

    // MARK: Closing

    /// Ends every timer (handlers released here, outside the locks) and refuses new ones: with
    /// ``PreciseTimerError/Code/shutDown``, or with the engine's error for
    /// ``ShardState/End/failed(_:)``. The engine's own stop is the caller's business.
    ///
    /// - Returns: `false` if the core was already closed (the first reason stays).
    @discardableResult
    package func close(_ reason: ShardState.End) -> Bool {
        // Every shard closes before a second caller (or ``isClosed``) sees the core closed; the
        // handlers are released after, outside every lock (a deinit may call back in).
        let swept = self.closing.withLock { closed -> [ShardState.Swept]? in
            guard !closed else { return nil }
            defer { closed = true }
            return self.shards.compactMap { shard in shard.withLock { $0.close(reason) } }
        }
        guard let swept else { return false }
        // On the calling thread only: sharing the work with Dispatch workers (tried: 37 → 30 ms
        // for 100 000 timers) took the cooperative pool's threads on Linux, where they are the
        // same threads, and starved every task of the process for seconds under load.
        for shard in swept { shard.release() }
        self.instruments.closed(reason)
        self.instruments.ended(swept.reduce(0) { $0 + $1.count })
        self.closeNotice.fire()
        return true
    }

    package var isClosed: Bool {
        self.closing.withLock { $0 }
    }

    // MARK: Driving

    /// Runs the timers due now, in deadline order, up to ``batchLimit`` of them.
    ///
    /// Handlers on ``TimerExecutor/loop`` run inline on the caller's thread; others are queued.
    /// Calls are serialized by whatever drives the core (its loop thread, its alarm queue, or
    /// the virtual-time service's `advance`), which alone touches the loop's view of the shards.
    ///
    /// - Parameter limit: Run no timer whose deadline is after it (see ``ShardState/next(now:notAfter:)``).
    package func runDue(notAfter limit: Int64 = .max) -> Outcome {
        self.sleepsUntil.store(.min, ordering: .sequentiallyConsistent)  // Running: pushes need not ring.
        for _ in 0..<Self.batchLimit {
            self.refreshDirtyHeads()
            let (index, head) = self.heads.earliest()
            let now = self.doorbell.now()
            // `.none` is no timer, even when the clock stands at the end of its range.
            guard head != .none, head.deadline <= now, head.deadline <= limit else {
                // About to sleep: publish until when, then look for a push that did not ring.
                self.sleepsUntil.store(head.deadline, ordering: .sequentiallyConsistent)
                guard self.dirty.load(ordering: .sequentiallyConsistent) == 0 else {
                    self.sleepsUntil.store(.min, ordering: .sequentiallyConsistent)
                    continue
                }
                return head == .none ? .empty : .idle(until: head.deadline)
            }
            let (next, call, newHead) = self.shards[index].withLock { registry in
                let (next, call) = registry.nextOnLoop(now: now, notAfter: limit)
                // Counted as it begins, under the lock, like a queue hop (see ``InFlightCalls``).
                if call != nil { self.inFlight.enter() }
                return (next, call, registry.peek())
            }
            self.heads[index] = newHead
            guard case .fire(let fire) = next else { continue }  // The head had gone stale.
            // The next timer's node starts loading while this one runs (a storm's nodes are cold).
            self.doorbell.prefetch(address: self.heads.earliest().head.address)
            if let queue = fire.node.queue {
                if self.hopsSynchronously {
                    queue.sync { self.hop(fire) }
                } else {
                    queue.async { self.hop(fire) }
                }
            } else if let call {
                self.invoke(call, for: fire, onLoop: true)
                self.inFlight.leave()
            }
        }
        return .batchLimitReached
    }

    /// Looks again at the shards that were pushed ahead of what the loop saw.
    @inline(__always)
    private func refreshDirtyHeads() {
        guard self.dirty.load(ordering: .relaxed) != 0 else { return }
        var mask = self.dirty.exchange(0, ordering: .acquiring)
        while mask != 0 {
            let index = mask.trailingZeroBitCount
            mask &= mask - 1
            self.heads[index] = self.shards[index].withLock { $0.peek() }
        }
    }

    /// Runs a fire that hopped to its queue. Its call begins here, under the lock, so a cancel
    /// (or pause, or reschedule) that returned while the fire waited in the queue prevents it.
    /// The call is counted in ``inFlight`` as it begins, under the same lock, so a close that
    /// follows sees it.
    private func hop(_ fire: ShardState.Fire) {
        let call = self.shards[self.shard(for: fire.node.hash)].withLock { registry -> ShardState.Call? in
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
    private func invoke(_ call: ShardState.Call, for fire: ShardState.Fire, onLoop: Bool) {
        let firedAt = self.doorbell.now()
        self.instruments.willCall(fire, firedAt: firedAt)
        call.handler(
            Tick(
                id: fire.node.id, count: call.count, missed: fire.missed,
                scheduledAt: MonotonicInstant(nanoseconds: fire.scheduledAt),
                firedAt: MonotonicInstant(nanoseconds: firedAt), generation: fire.node.sequence,
                wallClockDeadline: fire.occurrence == .min
                    ? nil : WallClockInstant(nanosecondsSinceEpoch: fire.occurrence))
        )
        self.instruments.didCall(fire, firedAt: firedAt, clock: self.doorbell)
        guard fire.node.repeats else { return }
        let now = self.doorbell.now()
        let shard = self.shard(for: fire.node.hash)
        let (wake, ended, head, deadline) = self.shards[shard].withLock { registry in
            let (wake, ended) = registry.complete(fire, firedAt: firedAt, now: now)
            return (wake, ended, onLoop && wake ? registry.peek() : nil, fire.node.deadline)
        }
        withExtendedLifetime(ended) {}
        if ended != nil { self.instruments.ended(1) }
        if let head {
            self.heads[shard] = head
        } else if wake {
            self.wakeLoop(for: shard, deadline: deadline)
        }
    }

    /// The earliest deadline of a pending (not paused) timer, if any: a pure read, shard by shard
    /// under each one's lock. It runs nothing and changes nothing the loop relies on.
    package var earliestDeadline: MonotonicInstant? {
        var earliest: Int64?
        for shard in self.shards where shard.count.load(ordering: .relaxed) > 0 {
            if let deadline = shard.withLock({ $0.earliestPendingDeadline }) {
                earliest = min(earliest ?? .max, deadline)
            }
        }
        return earliest.map(MonotonicInstant.init(nanoseconds:))
    }

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

    // MARK: Introspection and idle timeouts

    /// The next deadline of the timer under `id`, on the core's clock: `nil` when no timer has
    /// the ID, when it is paused, or when it is a one-shot whose call has begun. While a repeating
    /// timer's handler runs, the deadline it will be re-armed at if the call returns on time.
    /// One shard lock and one table look-up: O(1), no copy of the registry.
    package func deadline(of id: TimerID) -> MonotonicInstant? {
        let hash = id.tableHash
        return self.shards[self.shard(for: hash)].withLock { $0.nextDeadline(of: id, hash: hash) }
            .map(MonotonicInstant.init(nanoseconds:))
    }

    /// Pushes the pending timer under `id` to now + `delay` (``reschedule(_:after:)``), or, when
    /// none is pending (or it is a one-shot whose call has begun), schedules a one-shot with
    /// `handler` there: one step under the ID's shard lock, so two first touches of one ID never
    /// race to ``PreciseTimerError/Code/duplicateID`` and a touch never loses to an expiry that
    /// has not begun.
    ///
    /// - Returns: `true` when a new timer was created.
    /// - Throws: ``PreciseTimerError/Code/emptyID``, ``PreciseTimerError/Code/invalidDelay``,
    ///   ``PreciseTimerError/Code/reservedID`` (only when it would create a timer under a
    ///   generated name) or the close reason; nothing changes then.
    package func scheduleOrReschedule(
        id: TimerID, after delay: Duration, options: TimerOptions, _ handler: @escaping @Sendable (Tick) -> Void
    ) throws(PreciseTimerError) -> Bool {
        if id.rawValue.isEmpty { throw PreciseTimerError(.emptyID, id: id) }
        let now = self.doorbell.now()
        let deadline = try TimerRequest.deadline(now: now, after: try delay.validatedDelay(for: id), id: id)
        // Built outside the lock, used or not: an unused node's handler is released out here.
        let node = TimerNode(id: id, deadline: deadline, interval: 0, options: options, handler: handler)
        node.sequence = self.sequence.wrappingAdd(1, ordering: .relaxed).newValue
        node.name(id)
        let shard = self.shard(for: node.hash)
        // The usual touch: the timer exists and moves; nothing is counted.
        let (moved, wake) = self.shards[shard].withLock { $0.reschedule(id, hash: node.hash, to: deadline, now: now) }
        if moved {
            if wake { self.wakeLoop(for: shard, deadline: deadline) }
            return false
        }
        if id.isGenerated { throw PreciseTimerError(.reservedID, id: id) }
        // A creation, counted before the timer is visible (see ``schedule(_:id:options:_:)``); a
        // touch that created it on another thread in between makes this one a move after all.
        self.instruments.scheduled()
        let created: Bool
        let pushed: Bool
        do {
            (created, pushed) = try self.shards[shard].withLock {
                (registry) throws(PreciseTimerError) -> (Bool, Bool) in
                let (found, wake) = registry.reschedule(id, hash: node.hash, to: deadline, now: now)
                return found ? (false, wake) : (true, try registry.add(node))
            }
        } catch {
            self.instruments.refused()
            throw error
        }
        if !created { self.instruments.refused() }
        if pushed { self.wakeLoop(for: shard, deadline: deadline) }
        return created
    }
}

/// One shard of the registry: its semaphore-guarded state, and its timer count published for
/// ``TimerCore/scheduledCount`` to read without the lock.
private final class TimerShard: Sendable {
    private let registry: SemaphoreGuarded<ShardState>
    let count = Atomic<Int>(0)
    /// How many of its timers are bound to another clock, published like ``count``: the core
    /// skips shards without any when it rebases or looks for the earliest bound deadline.
    let boundCount = Atomic<Int>(0)
    /// The core's count of changes to bound timers (see ``TimerCore/boundVersion``).
    private let boundChanges: BoundChanges

    init(clocks: any TimerDriver, boundChanges: BoundChanges) {
        self.registry = SemaphoreGuarded(ShardState(clocks: clocks))
        self.boundChanges = boundChanges
    }

    /// Runs `body` under the shard's semaphore, then publishes the count.
    @inline(__always)
    func withLock<Result, Failure: Error>(
        _ body: (inout ShardState) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try self.registry.withLock { (registry) throws(Failure) -> Result in
            let boundVersion = registry.boundVersion
            defer {
                self.count.store(registry.count, ordering: .relaxed)
                if registry.boundVersion != boundVersion {
                    self.boundCount.store(registry.boundCount, ordering: .relaxed)
                    self.boundChanges.value.add(1, ordering: .releasing)
                }
            }
            return try body(&registry)
        }
    }
}

/// The loop's view of each shard's head: what it saw there last, which is exactly what that
/// shard's registry holds as `loopLooksAt` until a push comes before it (that push marks the
/// shard dirty and rings the doorbell if needed).
///
/// A tournament tree over the shards: every inner node holds the shard with the earliest head
/// below it, so the earliest shard is read in O(1) and a changed head costs log2(shards)
/// comparisons, instead of a scan of every shard per fire (a storm of 100 000 due timers
/// changes a head 100 000 times).
private final class LoopHeads: @unchecked Sendable {
    // Invariant: touched only by whatever drives the core, one call of `runDue` (or one handler
    // it calls) at a time: the loop thread, the alarm's serial queue, or a virtual `advance`.
    private let heads: UnsafeMutablePointer<ShardState.Head>
    /// `winners[i]` for i in 1..<count: the shard with the earliest head under inner node i
    /// (children 2i and 2i+1; a child at or past `count` is the leaf for shard child − count).
    private let winners: UnsafeMutablePointer<Int>
    private let count: Int

    /// - Parameter count: The number of shards, a power of two, at least 2.
    init(count: Int) {
        precondition(count >= 2 && count & (count - 1) == 0, "LoopHeads: a power of two, at least 2")
        self.count = count
        self.heads = .allocate(capacity: count)
        self.heads.initialize(repeating: .none, count: count)
        self.winners = .allocate(capacity: count)
        self.winners.initialize(repeating: 0, count: count)
        for node in stride(from: count - 1, through: 1, by: -1) {
            self.winners[node] = self.winner(of: node)
        }
    }

    deinit {
        self.heads.deallocate()
        self.winners.deallocate()
    }

    @inline(__always)
    private func winner(of node: Int) -> Int {
        let left = 2 * node
        let right = left + 1
        let a = left >= self.count ? left - self.count : self.winners[left]
        let b = right >= self.count ? right - self.count : self.winners[right]
        return self.heads[b] < self.heads[a] ? b : a
    }

    subscript(index: Int) -> ShardState.Head {
        get { self.heads[index] }
        set {
            self.heads[index] = newValue
            var node = (index + self.count) / 2
            while node >= 1 {
                self.winners[node] = self.winner(of: node)
                node /= 2
            }
        }
    }

    /// The shard whose head comes first, and that head.
    @inline(__always)
    func earliest() -> (index: Int, head: ShardState.Head) {
        let best = self.winners[1]
        return (best, self.heads[best])
    }
}

/// The count behind ``TimerCore/boundVersion``, shared by the shards.
private final class BoundChanges: Sendable {
    let value = Atomic<UInt64>(0)
}
