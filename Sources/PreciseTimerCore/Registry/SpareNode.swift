import CPreciseTimerCore

/// One ended plain node (``TimerNode/isPlain``) kept per thread, for that thread's next plain
/// timer: a thread that cancels and schedules in turn (sessions expiring and starting, a request's
/// timeout cancelled as the next request arms one) reuses one node instead of freeing it and
/// allocating another (a `malloc` and a `free` saved per schedule + cancel).
///
/// A node is kept only if nothing else references it (a fire in flight does): then no one can
/// see it change. A handle or a tick that names its old timer keeps only its address and its
/// generation, so it names nothing once the node is reused (a reused node has a new sequence:
/// ``ShardState/lookUp(_:hash:generation:location:)`` compares it).
///
/// The spare lives in a C thread-local (`CPreciseTimerCore_spareNode`), read and written inline:
/// a `pthread_getspecific` slot cost a call per schedule and per cancel, and its lazily made key
/// a `swift_once` check on each. The thread's first offer registers its exit, which releases the
/// spare (a thread-specific key's destructor).
///
/// Builds under AddressSanitizer or ThreadSanitizer keep no spare (``isEnabled``): every ended node
/// is freed there, so the sanitizers see any use of a node after its timer ended, reused or not.
package enum SpareNode {
    /// Whether threads keep a spare: `false` in a build under a sanitizer.
    package static var isEnabled: Bool { CPreciseTimerCore_keepsSpares() != 0 }

    /// Takes `node` out of the caller's hands as this thread's spare if it is plain, ended and
    /// referenced by nothing else, and the thread has no spare yet (`node` is then `nil`);
    /// otherwise leaves it. Called outside every lock: the caller then lets the node go, which
    /// may free it.
    @inline(__always)
    package static func offer(_ node: inout TimerNode?) {
        // Read through the optional: a local copy of the reference would make it look shared. The
        // state only once the node is known unshared: a fire in flight that holds it may write its
        // state under its shard's lock, which this thread does not hold (`isPlain` reads `let`s).
        guard node?.isPlain == true, isKnownUniquelyReferenced(&node), node?.state == .ended else { return }
        guard CPreciseTimerCore_hasSpare() == 0,
            CPreciseTimerCore_isSpareReleasedAtExit() != 0 || Self.releaseSpareAtExit()
        else { return }
        CPreciseTimerCore_keepSpare(Unmanaged.passRetained(node.take()!).toOpaque())
    }

    /// This thread's spare, taken (the caller owns it), or `nil`.
    @inline(__always)
    package static func take() -> TimerNode? {
        CPreciseTimerCore_takeSpare().map { Unmanaged<TimerNode>.fromOpaque($0).takeRetainedValue() }
    }

    /// The thread's first offer: registers its exit to release its spare. `false` if the process
    /// has run out of thread-specific keys, or under a sanitizer (no spare is kept then).
    @inline(never)
    private static func releaseSpareAtExit() -> Bool {
        CPreciseTimerCore_releaseSpareAtExit { Unmanaged<TimerNode>.fromOpaque($0).release() } != 0
    }
}
