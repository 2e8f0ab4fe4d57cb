import Dispatch

/// One scheduled timer: what it runs, and where it is in its life.
///
/// Nodes are shared between the registry, the heap and a fire in flight, so this is a class;
/// it stays small (no per-timer libevent event) because a daemon may hold a million of them.
///
/// A node of this class is named by its own sequence number: its ID is the generated
/// `timer-<sequence>`, computed when asked (a handler reading `tick.id`, an error), never
/// stored, which keeps the node at 72 bytes, an 80-byte malloc chunk. A timer with an ID its
/// caller chose is a ``NamedTimerNode``, which stores that ID (88 bytes, a 96-byte chunk).
package class TimerNode: @unchecked Sendable {
    // Invariant: every `var` is read and written only under its shard's semaphore (so exclusivity
    // is not checked at run time: one check per field access was a few percent of a cancel), except
    // `handler` of a node that `cancelAll` swapped out (see ``ShardState/Swept``). Every member is
    // `final` (or in an extension): only the stored ID differs in the subclass.

    package enum State: UInt8 {
        /// In its shard's heap (at ``heapIndex``, or in the heap's due run), waiting for its
        /// deadline.
        case pending
        /// Popped as due; its call is about to begin (possibly after a hop to its queue). Still
        /// registered, so a `cancel`, `pause` or `reschedule` now still prevents the call.
        case taken
        /// Its handler is being called (repeating timers only: a one-shot ends as its call begins).
        case running
        /// Paused: registered, not in the heap; `deadline` holds the time it had left.
        case paused
        /// Fired (one-shot), cancelled or shut down.
        case ended
    }

    // Fields are ordered so that what a cancel and a heap move touch comes first, and so that
    // the node is 72 bytes, an 80-byte malloc chunk: a million pending timers is a normal load.
    // What only some timers have (an interval, a queue, another clock, a tolerance, a policy
    // other than `.skip`, a call count above one) lives in ``Options``, allocated only for them:
    // a plain one-shot on the loop needs none of it. The ID's table hash is not kept either:
    // it is computed again (``hash``) where a one-shot's end or a storm's prefetch needs it, and
    // only its shard is kept (one byte, read for every fire).

    /// The handler (see ``handler``), in a struct: a closure stored bare is reabstracted through
    /// two thunks (two allocations) whenever its storage is accessed generically, as taking its
    /// address for ``handlerContextAddress`` or swapping it out does; a struct is stored and
    /// passed the same way everywhere.
    @exclusivity(unchecked) package final var storedHandler: StoredHandler?
    /// Pending: the next deadline. Taken or running: the deadline the call answers, from which
    /// the next one is computed (running and ``isRescheduled``: the next deadline itself).
    /// Paused: the nanoseconds it had left.
    @exclusivity(unchecked) package final var deadline: Int64
    /// Where its entry is in its shard's ``TimerHeap`` while pending: its index in the heap, or
    /// in the far tier as ``TimerHeap/farIndex(_:)`` (-2 and below); stale while the entry is in
    /// the heap's due run (see ``TimerHeap/remove(_:)``); -1 otherwise.
    @exclusivity(unchecked) package final var heapIndex: Int32 = -1
    @exclusivity(unchecked) package final var state: State = .pending
    /// ``pauseWhenDone``, ``isRescheduled`` and, without ``options``, whether its one call began.
    @exclusivity(unchecked) fileprivate final var flags: UInt8 = 0
    /// The registry shard its ID hashes to (``TimerCore/shard(for:)``), set with the ID.
    @exclusivity(unchecked) package fileprivate(set) final var shard: UInt8 = 0
    /// Whether the node is named by its sequence number (`timer-<sequence>`, not a
    /// ``NamedTimerNode``). A constant of its own, in what was the padding byte after ``shard``:
    /// the ID is read without the lock (a fire's `Tick`, outside every lock), and ``flags`` is
    /// written under it.
    package final let isNamedBySequence: Bool
    /// Bumped whenever a fire already taken becomes stale (reschedule, pause): only a fire
    /// stamped with the current epoch may start a call.
    @exclusivity(unchecked) package final var epoch: UInt32 = 0
    /// The registry's era when it was scheduled; an older era means ended by `cancelAll` or
    /// `close`, whatever `state` says (see ``ShardState/cancelAll()``).
    @exclusivity(unchecked) package final var era: UInt32 = 0
    /// The order among equal deadlines, drawn once when the timer is scheduled and kept for its
    /// whole life; also its generation (``Tick/generation``), never given to another timer.
    @exclusivity(unchecked) package final var sequence: UInt64 = 0
    /// What only some timers have; `nil` for a one-shot on the loop and the monotonic clock,
    /// with no tolerance and the default policy.
    package final let options: Options?

    /// The settings a timer may have beyond a plain one-shot's, and the counts that only a
    /// repeating timer reaches. The `let`s are read without a lock, the `var`s under the
    /// node's shard's semaphore, as the node's own.
    package final class Options: @unchecked Sendable {
        /// Nanoseconds between deadlines; 0 for a one-shot.
        package let interval: Int64
        /// `nil`: run on the loop.
        package let queue: DispatchQueue?
        /// For a timer on the continuous or the wall clock: what ties `deadline` (then an
        /// estimate on the monotonic clock) to its own clock; `nil` for the monotonic clock.
        package let clock: ClockBinding?
        package let policy: MissedTickPolicy
        /// The coalescing grid's step as a power of two (see ``coalescing``); 0: no grid.
        package let coalescingShift: UInt8
        /// `.burst` catch-up calls made in a row (at most ``MissedTickPolicy/maximumBurst``).
        @exclusivity(unchecked) package var catchUp: UInt8 = 0
        /// Calls begun.
        @exclusivity(unchecked) package var count: UInt64 = 0

        init(
            interval: Int64, queue: DispatchQueue?, clock: ClockBinding?, policy: MissedTickPolicy,
            coalescingShift: UInt8
        ) {
            self.interval = interval
            self.queue = queue
            self.clock = clock
            self.policy = policy
            self.coalescingShift = coalescingShift
        }
    }

    /// A node named by its sequence number `number`: its ID is `timer-<number>` (see
    /// ``TimerID/init(generatedNumber:)``), its ``sequence`` `number`. The caller places it
    /// (``place(hash:)``) before it is registered; ``TimerCore`` builds it with 0 and names it
    /// (``name(number:hash:)``) once the number is drawn.
    package convenience init(
        generatedNumber number: UInt64, deadline: Int64, interval: Int64, options: TimerOptions,
        clock: ClockBinding? = nil, tolerance: Int64 = 0, handler: @escaping @Sendable (Tick) -> Void
    ) {
        self.init(
            namedBySequence: true, deadline: deadline, interval: interval, options: options, clock: clock,
            tolerance: tolerance, handler: handler)
        self.sequence = number
    }

    /// The fields every node has. `fileprivate`: a node is built named, by its sequence
    /// (``init(generatedNumber:deadline:interval:options:clock:tolerance:handler:)``) or by the ID
    /// a ``NamedTimerNode`` stores, never without a name.
    fileprivate init(
        namedBySequence: Bool, deadline: Int64, interval: Int64, options: TimerOptions, clock: ClockBinding?,
        tolerance: Int64, handler: @escaping @Sendable (Tick) -> Void
    ) {
        self.isNamedBySequence = namedBySequence
        self.deadline = deadline
        let coalescingShift = Self.coalescingShift(interval: interval, tolerance: tolerance)
        let queue: DispatchQueue?
        switch options.executor {
        case .loop: queue = nil
        case .queue(let executor): queue = executor
        }
        if Self.needsOptions(interval: interval, options: options, clock: clock, tolerance: tolerance) {
            self.options = Options(
                interval: interval, queue: queue, clock: clock, policy: options.missedTicks,
                coalescingShift: coalescingShift)
        } else {
            self.options = nil
        }
        self.storedHandler = StoredHandler(body: handler)
    }
}

extension TimerNode {
    /// The coalescing grid's step as a power of two for a timer of `interval` (0: a one-shot)
    /// and `tolerance` nanoseconds; 0: no grid.
    @inline(__always)
    fileprivate static func coalescingShift(interval: Int64, tolerance: Int64) -> UInt8 {
        let mask = Coalescing.mask(tolerance: interval > 0 ? min(tolerance, interval / 2) : tolerance)
        return mask == 0 ? 0 : UInt8((mask &+ 1).trailingZeroBitCount)
    }

    /// Whether a timer with these settings has ``Options``: an interval, a queue, another clock,
    /// a tolerance that makes a grid, or a policy other than `.skip`. A timer without them and
    /// with a generated ID is a plain node, which a thread may reuse (``SpareNode``).
    @inline(__always)
    package static func needsOptions(
        interval: Int64, options: TimerOptions, clock: ClockBinding?, tolerance: Int64
    ) -> Bool {
        guard case .loop = options.executor else { return true }
        return interval != 0 || clock != nil || options.missedTicks != .skip
            || Self.coalescingShift(interval: interval, tolerance: tolerance) != 0
    }

    /// Whether the node is plain: named by its sequence, without ``Options``.
    @inline(__always)
    package var isPlain: Bool { self.isNamedBySequence && self.options == nil }

    /// Makes a plain node that ended, and that nothing else references, the node of a new plain
    /// timer: every field as a new node's
    /// (``init(generatedNumber:deadline:interval:options:clock:tolerance:handler:)``) with number 0,
    /// the caller naming it (``name(number:hash:)``) before it is registered.
    @inline(__always)
    package func reuse(deadline: Int64, handler: consuming @escaping @Sendable (Tick) -> Void) {
        assert(self.isPlain && self.state == .ended, "TimerNode: only an ended plain node is reused")
        self.storedHandler = StoredHandler(body: handler)
        self.deadline = deadline
        self.heapIndex = -1
        self.state = .pending
        self.flags = 0
        self.shard = 0
        self.epoch = 0
        self.era = 0
        self.sequence = 0
    }
}

/// A timer whose ID its caller chose: a ``TimerNode`` that stores it.
package final class NamedTimerNode: TimerNode, @unchecked Sendable {
    /// The ID, set once, before the node is shared.
    package let chosenID: TimerID

    /// A node named `id`, which must not be of the generated form (the caller checks, see
    /// ``TimerID/isGenerated``). The caller draws its ``sequence`` and names it
    /// (``name(number:hash:)``) before it is registered.
    package init(
        id: TimerID, deadline: Int64, interval: Int64, options: TimerOptions, clock: ClockBinding? = nil,
        tolerance: Int64 = 0, handler: @escaping @Sendable (Tick) -> Void
    ) {
        self.chosenID = id
        super.init(
            namedBySequence: false, deadline: deadline, interval: interval, options: options, clock: clock,
            tolerance: tolerance, handler: handler)
    }
}

extension TimerNode {
    /// Nanoseconds between deadlines; 0 for a one-shot.
    @inline(__always)
    package var interval: Int64 { self.options?.interval ?? 0 }
    /// `nil`: run on the loop.
    @inline(__always)
    package var queue: DispatchQueue? { self.options?.queue }
    /// For a timer on the continuous or the wall clock: what ties `deadline` to its own clock;
    /// `nil` for the monotonic clock.
    @inline(__always)
    package var clock: ClockBinding? { self.options?.clock }
    @inline(__always)
    package var policy: MissedTickPolicy { self.options?.policy ?? .skip }

    /// Calls begun (a one-shot's is 0 or 1, kept in a flag).
    @inline(__always)
    package var count: UInt64 {
        get {
            if let options = self.options { return options.count }
            return self.flags & Self.calledOnceBit != 0 ? 1 : 0
        }
        set {
            if let options = self.options {
                options.count = newValue
            } else {
                precondition(newValue <= 1, "TimerNode: a timer without options is called once")
                self.setFlag(Self.calledOnceBit, newValue == 1)
            }
        }
    }

    /// The ID's ``TimerID/tableHash``: its shard (top bits) and its table slot (low bits).
    /// Computed, not stored: a generated ID's is a few arithmetic operations on its number (the
    /// node's ``sequence``), a chosen ID's a SipHash of its string.
    @inline(__always)
    package var hash: UInt64 {
        if self.isNamedBySequence, let hash = TimerID.tableHash(generatedNumber: self.sequence) {
            return hash
        }
        return self.id.tableHash
    }

    /// A timer's handler, wrapped (see ``storedHandler``).
    package struct StoredHandler {
        package var body: @Sendable (Tick) -> Void
    }

    /// What the timer runs; `nil` once it ended (or its call began, for a one-shot).
    @inline(__always)
    package var handler: (@Sendable (Tick) -> Void)? {
        get {
            guard let stored = self.storedHandler else { return nil }
            return stored.body
        }
        set {
            if let newValue {
                self.storedHandler = StoredHandler(body: newValue)
            } else {
                self.storedHandler = nil
            }
        }
    }

    /// The address of the handler's closure context (0 without a handler or context), for
    /// prefetching only: a thick closure is a function pointer and a context reference, in that
    /// order (the Swift ABI's layout), and reading the handler as a value would retain the
    /// context, the very cache miss a prefetch is meant to hide. Read under the shard's lock.
    @inline(__always)
    package var handlerContextAddress: UInt {
        withUnsafeMutablePointer(to: &self.storedHandler) {
            UnsafeRawPointer($0).load(fromByteOffset: MemoryLayout<UInt>.size, as: UInt.self)
        }
    }

    /// The handler's function pointer as a number (0 without a handler), read the way
    /// ``handlerContextAddress`` is: testing ``storedHandler`` for `nil` could copy it, a retain
    /// and a release of its context. Read under the shard's lock.
    @inline(__always)
    package var handlerAddress: UInt {
        withUnsafeMutablePointer(to: &self.storedHandler) {
            UnsafeRawPointer($0).load(as: UInt.self)
        }
    }

    private static let calledOnceBit: UInt8 = 0x20
    private static let pauseWhenDoneBit: UInt8 = 0x40
    private static let isRescheduledBit: UInt8 = 0x80

    /// `.burst` catch-up calls made in a row (see ``MissedTickPolicy/maximumBurst``); always 0
    /// without ``options`` (only a repeating timer catches up).
    @inline(__always)
    package var catchUp: UInt8 {
        get { self.options?.catchUp ?? 0 }
        set {
            assert(
                newValue <= UInt8(MissedTickPolicy.maximumBurst),
                "TimerNode: catchUp is at most MissedTickPolicy.maximumBurst")
            if let options = self.options {
                options.catchUp = newValue
            } else {
                precondition(newValue == 0, "TimerNode: only a repeating timer catches up")
            }
        }
    }

    @inline(__always)
    private func setFlag(_ bit: UInt8, _ isSet: Bool) {
        self.flags = isSet ? self.flags | bit : self.flags & ~bit
    }

    /// Set by `pause` while the handler runs: the timer parks when the call returns.
    @inline(__always)
    package var pauseWhenDone: Bool {
        get { self.flags & Self.pauseWhenDoneBit != 0 }
        set { self.setFlag(Self.pauseWhenDoneBit, newValue) }
    }

    /// Set by `reschedule` while the handler runs: ``deadline`` then holds the next deadline,
    /// used when the call returns (the one the call answers is in its fire, and nothing reads
    /// it from the node once the call has begun).
    @inline(__always)
    package var isRescheduled: Bool {
        get { self.flags & Self.isRescheduledBit != 0 }
        set { self.setFlag(Self.isRescheduledBit, newValue) }
    }

    /// The coalescing grid's step minus one (a power of two minus one), from the options'
    /// tolerance; 0 for a timer that fires at its deadline (see ``fireAt``).
    @inline(__always)
    package var coalescing: Int64 {
        guard let shift = self.options?.coalescingShift, shift != 0 else { return 0 }
        return (Int64(1) << Int64(shift)) - 1
    }

    /// When the loop fires the timer: its deadline, or for a tolerant timer the first point of
    /// its coalescing grid at or after it (never before the deadline, less than its tolerance
    /// after). The heap orders timers by this; ``deadline`` stays what the call answers.
    @inline(__always)
    package var fireAt: Int64 { Coalescing.fireAt(self.deadline, mask: self.coalescing) }

    /// Whether the timer fires more than once: an interval, or a wall-clock schedule.
    @inline(__always)
    package var repeats: Bool {
        guard let options = self.options else { return false }
        return options.interval > 0 || options.clock?.isCalendar == true
    }

    /// Records the shard of `hash`, the node's ID's ``TimerID/tableHash`` (computed by the
    /// caller, who needed it anyway), before the node is registered.
    @inline(__always)
    package func place(hash: UInt64) {
        self.shard = UInt8(truncatingIfNeeded: hash >> TimerCore.shardShift)
    }

    /// Gives a node built before its number was drawn its ``sequence`` and its shard, before it
    /// is registered.
    @inline(__always)
    package func name(number: UInt64, hash: UInt64) {
        self.sequence = number
        self.place(hash: hash)
    }

    /// The timer's ID: the stored one of a ``NamedTimerNode``; otherwise `timer-<sequence>`,
    /// built when asked (no allocation up to `timer-999999999`: a small string).
    @inline(__always)
    package var id: TimerID {
        if self.isNamedBySequence { return TimerID(generatedNumber: self.sequence) }
        return unsafeDowncast(self, to: NamedTimerNode.self).chosenID
    }

    /// Whether the node is the timer named `id`, whose ``TimerID/tableHash`` is `hash`: for a
    /// generated hash (exact, one number per hash) the node's own hash, computed from its number,
    /// and no string; otherwise the IDs, compared as strings (`id` is evaluated only then).
    @inline(__always)
    package func isNamed(_ id: @autoclosure () -> TimerID, hash: UInt64) -> Bool {
        if hash & TimerID.generatedHashBit != 0 { return self.isNamedBySequence && self.hash == hash }
        if self.isNamedBySequence { return self.id == id() }  // Only past 2⁶¹, hashed as strings.
        return unsafeDowncast(self, to: NamedTimerNode.self).chosenID == id()
    }
}
