import Dispatch

/// One scheduled timer: what it runs, and where it is in its life.
///
/// Nodes are shared between the registry, the heap and a fire in flight, so this is a class;
/// it stays small (no per-timer libevent event) because a daemon may hold a million of them.
package final class TimerNode: @unchecked Sendable {
    // Invariant: every `var` is read and written only under its shard's semaphore (so exclusivity
    // is not checked at run time: one check per field access was a few percent of a cancel), except
    // `handler` of a node that `cancelAll` swapped out (see ``ShardState/Swept``).

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
    // the node is 120 bytes, a 128-byte malloc chunk (234 B per pending timer with its table slot,
    // heap entry and handler): a million pending timers is a normal load. 128 bytes is also
    // glibc's largest fast-bin chunk: freeing a node (a fired one-shot, a cancel, a shutdown) is
    // a push onto a list, where a 144-byte chunk is merged with its free neighbours, writing
    // into other free chunks all over the heap.

    /// Set once, before the node is shared.
    @exclusivity(unchecked) package var id: TimerID
    /// The handler (see ``handler``), in a struct: a closure stored bare is reabstracted through
    /// two thunks (two allocations) whenever its storage is accessed generically, as taking its
    /// address for ``handlerContextAddress`` or swapping it out does; a struct is stored and
    /// passed the same way everywhere.
    @exclusivity(unchecked) package var storedHandler: StoredHandler?
    /// Pending: the next deadline. Taken or running: the deadline the call answers, from which
    /// the next one is computed (running and ``isRescheduled``: the next deadline itself).
    /// Paused: the nanoseconds it had left.
    @exclusivity(unchecked) package var deadline: Int64
    /// Where its entry is in its shard's ``TimerHeap`` while pending (stale while the entry is in
    /// the heap's due run, see ``TimerHeap/remove(_:)``); -1 otherwise.
    @exclusivity(unchecked) package var heapIndex: Int32 = -1
    @exclusivity(unchecked) package var state: State = .pending
    package let policy: MissedTickPolicy
    /// ``catchUp``, ``pauseWhenDone`` and ``isRescheduled`` in one byte.
    @exclusivity(unchecked) private var flags: UInt8 = 0
    /// The coalescing grid's step as a power of two (see ``coalescing``); 0: no grid.
    private let coalescingShift: UInt8
    /// Bumped whenever a fire already taken becomes stale (reschedule, pause): only a fire
    /// stamped with the current epoch may start a call.
    @exclusivity(unchecked) package var epoch: UInt32 = 0
    /// The registry's era when it was scheduled; an older era means ended by `cancelAll` or
    /// `close`, whatever `state` says (see ``ShardState/cancelAll()``).
    @exclusivity(unchecked) package var era: UInt32 = 0
    /// Nanoseconds between deadlines; 0 for a one-shot.
    package let interval: Int64
    /// `nil`: run on the loop.
    package let queue: DispatchQueue?
    /// The order among equal deadlines, drawn once when the timer is scheduled and kept for its
    /// whole life; also its generation (``Tick/generation``), never given to another timer.
    @exclusivity(unchecked) package var sequence: UInt64 = 0
    @exclusivity(unchecked) package var count: UInt64 = 0
    /// The ID's ``TimerID/tableHash``, set with `id`: it picks the node's shard and table slot,
    /// so the loop never hashes a string to find them again.
    @exclusivity(unchecked) package var hash: UInt64 = 0
    /// For a timer on the continuous or the wall clock: what ties `deadline` (then an estimate
    /// on the monotonic clock) to its own clock; `nil` for the monotonic clock.
    package let clock: ClockBinding?

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

    private static let catchUpBits: UInt8 = 0x3F
    private static let pauseWhenDoneBit: UInt8 = 0x40
    private static let isRescheduledBit: UInt8 = 0x80

    /// `.burst` catch-up calls made in a row (see ``MissedTickPolicy/maximumBurst``, which six
    /// bits hold).
    @inline(__always)
    package var catchUp: UInt8 {
        get { self.flags & Self.catchUpBits }
        set {
            assert(newValue <= Self.catchUpBits, "TimerNode: catchUp holds six bits (MissedTickPolicy.maximumBurst)")
            self.flags = (self.flags & ~Self.catchUpBits) | (newValue & Self.catchUpBits)
        }
    }

    /// Set by `pause` while the handler runs: the timer parks when the call returns.
    @inline(__always)
    package var pauseWhenDone: Bool {
        get { self.flags & Self.pauseWhenDoneBit != 0 }
        set { self.flags = newValue ? self.flags | Self.pauseWhenDoneBit : self.flags & ~Self.pauseWhenDoneBit }
    }

    /// Set by `reschedule` while the handler runs: ``deadline`` then holds the next deadline,
    /// used when the call returns (the one the call answers is in its fire, and nothing reads
    /// it from the node once the call has begun).
    @inline(__always)
    package var isRescheduled: Bool {
        get { self.flags & Self.isRescheduledBit != 0 }
        set { self.flags = newValue ? self.flags | Self.isRescheduledBit : self.flags & ~Self.isRescheduledBit }
    }

    /// The coalescing grid's step minus one (a power of two minus one), from the options'
    /// tolerance; 0 for a timer that fires at its deadline (see ``fireAt``).
    @inline(__always)
    package var coalescing: Int64 {
        self.coalescingShift == 0 ? 0 : (Int64(1) << Int64(self.coalescingShift)) - 1
    }

    package init(
        id: TimerID, deadline: Int64, interval: Int64, options: TimerOptions, clock: ClockBinding? = nil,
        tolerance: Int64 = 0, handler: @escaping @Sendable (Tick) -> Void
    ) {
        self.id = id
        self.deadline = deadline
        self.interval = interval
        self.clock = clock
        let mask = Coalescing.mask(tolerance: interval > 0 ? min(tolerance, interval / 2) : tolerance)
        self.coalescingShift = mask == 0 ? 0 : UInt8((mask &+ 1).trailingZeroBitCount)
        self.policy = options.missedTicks
        switch options.executor {
        case .loop: self.queue = nil
        case .queue(let queue): self.queue = queue
        }
        self.storedHandler = StoredHandler(body: handler)
    }

    /// When the loop fires the timer: its deadline, or for a tolerant timer the first point of
    /// its coalescing grid at or after it (never before the deadline, less than its tolerance
    /// after). The heap orders timers by this; ``deadline`` stays what the call answers.
    @inline(__always)
    package var fireAt: Int64 { Coalescing.fireAt(self.deadline, mask: self.coalescing) }

    /// Whether the timer fires more than once: an interval, or a wall-clock schedule.
    @inline(__always)
    package var repeats: Bool { self.interval > 0 || self.clock?.schedule != nil }

    /// Gives the node its ID (and that ID's hash), before it is registered.
    @inline(__always)
    package func name(_ id: TimerID) {
        self.id = id
        self.hash = id.tableHash
    }
}

extension TimerDriver {
    /// Hints the cache lines of the node at `address`: 120 bytes (``TimerNode``'s size, checked
    /// by a test), three lines unless it starts on one.
    @inline(__always)
    func prefetch(node address: UInt) {
        self.prefetch(address: address)
        self.prefetch(address: address &+ 64)
        self.prefetch(address: address &+ 119)
    }

    /// Hints what firing or releasing `node` touches besides the node: its handler's closure
    /// context and, when given, its slot in `table`.
    @inline(__always)
    func prefetch(handlerOf node: TimerNode, slotIn table: TimerTable?) {
        if let table { self.prefetch(address: table.slotAddress(hash: node.hash)) }
        self.prefetch(address: node.handlerContextAddress)
    }
}
