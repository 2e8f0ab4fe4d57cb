import Dispatch
import Synchronization

/// The scheduling logic shared by `PreciseTimer`, `DispatchReferenceTimer`, the
/// virtual-time test service and the tests' manual driver: the registry, sharded into
/// semaphore-guarded ``ShardState`` shards, and running what they say is due in one order.
///
/// It knows nothing of libevent; its ``TimerDriver`` tells it the time and is rung when the
/// loop must look at the heap again. The services wrap it and add their engine's lifecycle.
///
/// ## Ground rules
///
/// Who may touch what, and under which lock. Each type repeats its own part beside its fields.
///
/// - **A shard's semaphore** (``TimerShard``, a ``SemaphoreGuarded``) guards its ``ShardState``
///   (table, heap, due run, bound timers and their deadline heaps, era, end) and every `var` of
///   the ``TimerNode``s and ``ClockBinding``s registered in it. A node's `let`s (policy,
///   interval, queue, clock, schedule) are read without it.
/// - **No user code and no blocking call under a semaphore.** Handlers run after the lock is
///   released; a handler, a captured value or a `WallClockSchedule` that ends is released
///   outside it (transitions return what to release: ``ShardState/Swept``, stored handlers,
///   nodes); a schedule is asked on the driving thread with no lock held, and its answer is
///   committed under the lock only if the timer's epoch still matches (a cancel, pause or
///   reschedule in between wins), as a queue hop begins its call.
/// - **The loop's view** (``LoopHeads``, the `now` a pass keeps) belongs to whatever drives the
///   core, one ``runDue(notAfter:)`` (or a handler it calls) at a time: the loop thread, the
///   alarm's serial queue, or a virtual `advance`. Other threads tell it about an earlier timer
///   through ``dirty`` and ``sleepsUntil`` (Dekker-style, sequentially consistent: see
///   ``wakeLoop(for:deadline:)``), never by writing the view.
/// - **References.** A shard's ``TimerTable`` owns one reference to each registered node
///   (`Unmanaged`: the schedule's own reference, handed over at insert; given back at removal,
///   to the fire that takes the node or to the caller that ends it); heap entries and the due
///   run hold nodes unretained (a node is in the heap only while registered); a
///   ``ShardState/Fire`` holds a strong reference, so a node taken for a call outlives its
///   removal from the table. The deadline heaps of bound timers name nodes by identity only, so
///   they keep nothing alive. A cancel's ended node, if nothing else references it, becomes its
///   thread's spare (``SpareNode``) and is reused, reset, by that thread's next plain timer.
/// - **Heap keys.** A heap entry's key is its node's ``TimerNode/fireAt`` when it was filed. A
///   reschedule to a later deadline (an idle timeout pushed on) only writes the node, so a key
///   may be early, never late; the shard files an early entry again when it reaches the top
///   (``ShardState/settleHead()``), before the loop reads a head or takes a timer.
/// - **Heap tiers.** A shard's ``TimerHeap`` keeps its nearest entries in a 4-ary heap (and a
///   due run) and, past 1 024 entries, the later ones in an unordered far tier behind a bound:
///   every heap and run entry is before the bound, every far entry at or after it, and the far
///   tier is empty whenever the heap and the run are. So the earliest entry is always in the heap
///   or the run, and a node's ``TimerNode/heapIndex`` says which tier holds it. A far entry
///   taken out stays in place, marked dead in a bitmap, until the tier is compacted: its node
///   may be freed meanwhile, so nothing reads a node through a far entry without that bit.
/// - **Counters.** ``sequence`` gives scheduling order, generations and generated IDs (never
///   reused); a node's `epoch` invalidates fires already taken; the shard's `era` ends every
///   node swapped out by `cancelAll` or `close` at once; ``boundVersion`` tells an engine its
///   timerfds need re-arming; ``inFlight`` counts queue hops whose call has begun.
/// - **Release exactly once.** A ``ShardState/Swept`` cannot be copied and is consumed by its
///   `release`; a stored handler is moved out of its node (never copied under the lock).
@usableFromInline package final class TimerCore: Sendable {
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
    let shards: [TimerShard]
    /// The same shards, unretained, for ``withShard(_:_:)``. Allocated once with the core and
    /// freed in its `deinit`; never written after `init`.
    private nonisolated(unsafe) let shardReferences: UnsafeMutablePointer<Unmanaged<TimerShard>>
    /// Scheduling order and generations, one counter for every shard: timers due at the same
    /// instant fire in the order they were scheduled, whichever shards they live in. Generated
    /// IDs take their number from it too. Every schedule writes it, from any thread, so it has
    /// cache lines of its own (``SequenceCounter``).
    let sequence = SequenceCounter()
    /// Shards whose head the loop must look at again (bit `k` for shard `k`): set by a thread
    /// that pushed a timer ahead of what the loop saw there.
    let dirty = Atomic<UInt64>(0)
    /// The deadline the loop sleeps until (`.max`: no timer; `.min`: it is running, or a wake-up
    /// is on its way). A push ahead of a shard's head rings the doorbell only if it also comes
    /// before this, so a timer scheduled into a quiet shard does not wake a loop that sleeps
    /// until an earlier deadline anyway.
    let sleepsUntil = Atomic<Int64>(.max)
    /// The loop's view of every shard's head (see ``LoopHeads``).
    let heads: LoopHeads
    /// Makes ``close(_:)`` happen once, and whole (every shard) before anyone sees it closed. A
    /// semaphore rather than a `Mutex`: ThreadSanitizer cannot see `Mutex`'s ordering on Linux.
    let closing = SemaphoreGuarded(false)
    package let doorbell: any TimerDriver
    /// Whether a fire for a ``TimerExecutor/queue(_:)`` timer waits for its call (virtual time:
    /// `advance` returns only once every call it caused has returned).
    let hopsSynchronously: Bool
    /// Logging and metrics hooks, each called outside the locks.
    package let instruments: TimerInstruments
    /// Queue hops whose call has begun and not yet returned (a shutdown waits for them).
    package let inFlight = InFlightCalls()
    /// Fires once the core closes.
    package let closeNotice = CloseNotice()
    private let wakeUpCount = Atomic<Int>(0)
    let boundChanges: BoundChanges
    /// The ``ProcessGeneration`` of the process that created the core (see ``isInherited``).
    let processGeneration = ProcessGeneration.registeringCurrent()

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
    package static let shardShift = UInt64(64 - shardCount.trailingZeroBitCount)

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
        let shards = (0..<Self.shardCount).map { _ in TimerShard(clocks: doorbell, boundChanges: boundChanges) }
        self.shards = shards
        self.shardReferences = .allocate(capacity: Self.shardCount)
        self.shardReferences.initialize(from: shards.map { .passUnretained($0) }, count: Self.shardCount)
        self.heads = LoopHeads(count: Self.shardCount)
    }

    deinit {
        self.shardReferences.deallocate()
    }

    /// Runs `body` with shard `index`, borrowed: no reference count is touched. `shards[index]`
    /// retains and releases the shard around each use, two atomic writes to the shard object's
    /// first cache line, which every caller thread and the loop read for each call: with two
    /// caller threads that line moved between their cores on most calls.
    ///
    /// Debug builds take the plain `shards[index]`: there the typed error's trip round
    /// `_withUnsafeGuaranteedRef` (in generic optionals) is not specialized, so every call would
    /// instantiate their metadata in the runtime, where ThreadSanitizer runs stalled. Optimized
    /// builds specialize it away; the behaviour is the same either way.
    @inline(__always)
    func withShard<Result, Failure: Error>(
        _ index: Int, _ body: (TimerShard) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        #if DEBUG
            return try body(self.shards[index])
        #else
            // `_withUnsafeGuaranteedRef` rethrows untyped: the typed error goes round it. Not in a
            // `Swift.Result`, whose outlined destroy (of an error of a dozen fields) cost every
            // call some 45 instructions.
            var failure: Failure? = nil
            let result: Result? = self.shardReferences[index]._withUnsafeGuaranteedRef { shard in
                do throws(Failure) {
                    return try body(shard)
                } catch {
                    failure = error
                    return nil
                }
            }
            if let failure { throw failure }
            return result.unsafelyUnwrapped
        #endif
    }

    /// Runs `body` under shard `index`'s lock, the shard borrowed (see ``withShard(_:_:)``).
    @inline(__always)
    func withLockedShard<Result, Failure: Error>(
        _ index: Int, _ body: (inout ShardState) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try self.withShard(index) { (shard) throws(Failure) in try shard.withLock(body) }
    }

    /// Hints the slot of shard `index`'s table where a look-up of `hash` starts (see
    /// ``TimerShard/slotAddress(hash:)``): at a million timers it is a cache miss, which then
    /// overlaps the caller's work before it takes the lock.
    ///
    /// - Parameter inOrder: The caller is one of a stream that takes generated IDs in the order
    ///   of their numbers (schedules, and cancels of request timeouts): for the first of a group
    ///   of four (one line, see ``TimerID/tableHash(generatedNumber:)``), the line of the shard's
    ///   next group is hinted too, so the stream finds it warm.
    @inline(__always)
    func prefetchSlot(shard index: Int, hash: UInt64, inOrder: Bool = false) {
        self.withShard(index) { shard in
            Prefetch.line(at: shard.slotAddress(hash: hash))
            if inOrder, hash & TimerID.generatedHashBit != 0, hash & 3 == 0 {
                Prefetch.line(at: shard.slotAddress(hash: TimerID.tableHash(nextGroupAfter: hash)))
            }
        }
    }

    /// The shard of the timer whose ID hashes to `hash` (its top bits; the table uses the low ones).
    @inline(__always)
    func shard(for hash: UInt64) -> Int {
        Int(truncatingIfNeeded: hash >> Self.shardShift)
    }

    /// A push came before what the loop saw of shard `shard`: marks the shard, and rings the
    /// doorbell if `deadline` also comes before the loop's sleep, once per sleep.
    ///
    /// Race-free with the loop going to sleep (``runDue(notAfter:)``), Dekker-style: the push
    /// marks the shard, then reads the sleep; the loop publishes its sleep, then reads the
    /// marks (all sequentially consistent). Either the loop sees the mark and looks again, or
    /// the push sees the sleep and rings.
    func wakeLoop(for shard: Int, deadline: Int64) {
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

    /// What a core inherited through `fork()` throws where it would schedule (see
    /// ``TimerCoreService``).
    package static func inheritedRefusal(_ id: TimerID?) -> PreciseTimerError {
        PreciseTimerError(.shutDown, id: id, value: "a service inherited through fork()")
    }

    /// Registers a timer and hands out its identity: the ID, and the generation that only this
    /// timer of this core ever has. Everything built on a service takes the identity from here,
    /// never by looking it up afterwards (by then a one-shot may have fired and its ID been reused).
    ///
    /// `PreciseTimer`'s inlinable `scheduleTimer` calls it directly, so that a schedule reaches the
    /// core in one call; hence the fork check here too (see ``isInherited``).
    /// The handler is consumed, here and by `scheduleTimer`: the closure a caller writes goes into
    /// the node as it is, where a borrowed one was retained there (an atomic operation on its
    /// context) and released by the caller after the call (another).
    ///
    /// - Throws: ``PreciseTimerError/Code/emptyID``, ``PreciseTimerError/Code/reservedID``,
    ///   the trigger's validation errors, ``PreciseTimerError/Code/duplicateID`` and the close reason;
    ///   ``PreciseTimerError/Code/shutDown`` in a core inherited through `fork()`.
    @usableFromInline
    package func schedule(
        _ trigger: TimerTrigger, id: TimerID?, options: TimerOptions,
        _ handler: consuming @escaping @Sendable (Tick) -> Void
    ) throws(PreciseTimerError) -> TimerHandle {
        self.sequence.prefetchForWrite()  // Overlaps the checks and the clock read below.
        guard !self.isInherited else { throw Self.inheritedRefusal(id) }
        if let id {
            if id.rawValue.isEmpty { throw PreciseTimerError(.emptyID, id: id) }
            if id.isGenerated { throw PreciseTimerError(.reservedID, id: id) }
        }
        let tolerance = try Self.validatedTolerance(options, id: id)
        let request = try trigger.request(now: self.doorbell.now(), clock: options.clock, driver: self.doorbell, id: id)
        // A chosen ID's slot is hinted now, to overlap building the node.
        let chosenHash = id?.tableHash
        if let chosenHash { self.prefetchSlot(shard: self.shard(for: chosenHash), hash: chosenHash, inOrder: true) }
        // Built outside the lock: if the registry refuses it, its handler is released out here.
        let (node, fireAt) = Self.makeNode(
            id: id, request: request, options: options, tolerance: tolerance, handler: handler)
        // Drawn as late as it can be, so that the counter's line, hinted above, has come.
        let number = self.sequence.next()
        // A generated name is unique by construction: its number is this timer's generation, and
        // no explicit ID may take the generated form. It is not built here (see ``TimerHandle/id``).
        let hash =
            chosenHash ?? TimerID.tableHash(generatedNumber: number) ?? TimerID(generatedNumber: number).tableHash
        let shard = self.shard(for: hash)
        // A generated ID's slot follows the previous one's, hinted by the previous schedule.
        if chosenHash == nil { self.prefetchSlot(shard: shard, hash: hash, inOrder: true) }
        node._withUnsafeGuaranteedRef { $0.name(number: number, hash: hash) }
        // Counted before it is visible: its fire or cancel may come on another thread at once.
        self.instruments.scheduled()
        let wake: Bool
        do {
            wake = try self.withLockedShard(shard) { (registry) throws(PreciseTimerError) in
                try registry.add(owned: node, hash: hash)
            }
        } catch {
            node.release()
            self.instruments.refused()
            throw error
        }
        // A timer on another clock always wakes the loop, whatever its deadline: the engine arms
        // its timerfd on that clock at the end of the loop's pass (a daily timer must not wait
        // for some other timer to bring the loop round).
        if wake || request.clock != nil {
            self.wakeLoop(for: shard, deadline: request.clock != nil ? .min : fireAt)
        }
        let location = UInt(bitPattern: node.toOpaque())
        guard let id else { return TimerHandle(generatedBy: number, location: location) }
        return TimerHandle(id: id, generation: number, location: location)
    }

    /// The node of a timer about to be scheduled, and when it fires (read while the node is
    /// still this thread's alone: once added, the loop owns it). The node comes with its one
    /// reference, for the registry's table to take over (``ShardState/add(owned:hash:)``): built
    /// here, its strong reference ends as this returns, right after the hand-over, so no retain
    /// and release pair (two atomic operations) spans the lock, as one did around every call a
    /// local reference outlived.
    ///
    /// Its sequence number and shard are not set yet: the caller draws the number after, and
    /// names the node (``TimerNode/name(number:hash:)``) before it is registered.
    @inline(__always)
    private static func makeNode(
        id: TimerID?, request: TimerRequest, options: TimerOptions, tolerance: Int64,
        handler: consuming @escaping @Sendable (Tick) -> Void
    ) -> (node: Unmanaged<TimerNode>, fireAt: Int64) {
        let node: TimerNode
        if let id {
            node = NamedTimerNode(
                id: id, deadline: request.deadline, interval: request.interval, options: options,
                clock: request.clock, tolerance: tolerance, handler: handler)
        } else if !TimerNode.needsOptions(
            interval: request.interval, options: options, clock: request.clock, tolerance: tolerance),
            let spare = SpareNode.take()
        {
            spare.reuse(deadline: request.deadline, handler: handler)
            node = spare
        } else {
            node = TimerNode(
                generatedNumber: 0, deadline: request.deadline, interval: request.interval, options: options,
                clock: request.clock, tolerance: tolerance, handler: handler)
        }
        return (Unmanaged.passRetained(node), node.fireAt)
    }

    /// The options' tolerance in nanoseconds: 0 to ``TimerService/maximumDuration``. Inlined for
    /// the usual zero; any other is converted out of line.
    @inline(__always)
    static func validatedTolerance(_ options: TimerOptions, id: TimerID?) throws(PreciseTimerError) -> Int64 {
        // Not `== .zero`: `Duration.zero` is a call into the standard library.
        options.tolerance.attoseconds == 0 ? 0 : try Self.validatedTolerance(options.tolerance, id: id)
    }

    @inline(never)
    private static func validatedTolerance(_ tolerance: Duration, id: TimerID?) throws(PreciseTimerError) -> Int64 {
        guard let nanoseconds = tolerance.timerNanoseconds else {
            throw PreciseTimerError(.invalidDelay, id: id, value: "tolerance \(tolerance)")
        }
        return nanoseconds
    }

    /// A pass of the loop ran timers: one wake-up (``wakeUps``, and the metric).
    func wokeUp() {
        self.wakeUpCount.add(1, ordering: .relaxed)
        self.instruments.wokeUp()
    }

    /// The loop's wake-ups so far: passes of ``runDue(notAfter:)`` that ran at least one timer
    /// (a batch cut at ``batchLimit`` counts once per pass). Tolerant timers due in one cell of
    /// their grid share one. `TestTimerService.loopWakeUps` reads it, and each one is reported to
    /// ``TimerMetricsRecorder/loopWokeUp()``; rings of the engine's doorbell are not counted here
    /// (`TestTimerService.wakeUps` counts those).
    package var wakeUps: Int { self.wakeUpCount.load(ordering: .relaxed) }

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
        let swept = self.closing.withLock { closed -> ShardState.Swept? in
            guard !closed else { return nil }
            defer { closed = true }
            var swept = ShardState.Swept()
            for shard in self.shards {
                if let part = shard.withLock({ $0.close(reason) }) { swept.absorb(part) }
            }
            return swept
        }
        guard let swept else { return false }
        let count = swept.count
        // On the calling thread only: Dispatch's workers are the cooperative pool's threads on
        // Linux, and sharing this work with them starves every task of the process under load.
        swept.release()
        self.instruments.closed(reason)
        self.instruments.ended(count)
        self.closeNotice.fire()
        return true
    }

    package var isClosed: Bool {
        self.closing.withLock { $0 }
    }
}
