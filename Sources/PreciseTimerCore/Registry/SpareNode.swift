import Glibc

/// One ended plain node (``TimerNode/isPlain``) kept per thread, for that thread's next plain
/// timer: a thread that cancels and schedules in turn (sessions expiring and starting, a request's
/// timeout cancelled as the next request arms one) reuses one node instead of freeing it and
/// allocating another (about 190 of a schedule + cancel's 2 150 instructions).
///
/// A node is kept only if nothing else references it (a fire in flight does): then no one can
/// see it change. A handle or a tick that names its old timer keeps only its address and its
/// generation, so it names nothing once the node is reused (a reused node has a new sequence:
/// ``ShardState/lookUp(_:hash:generation:location:)`` compares it). The spare lives in a box in
/// a thread-specific slot, made the first time the thread offers a node; the thread's exit
/// releases the box and its spare.
package enum SpareNode {
    /// A thread's spare.
    private final class Box {
        var node: TimerNode?
    }

    /// The thread-specific slot holding a retained ``Box``, or `nil` if the process ran out of
    /// keys (every node is then freed, as without a spare).
    private static let key: pthread_key_t? = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { pointer in
            if let pointer { Unmanaged<Box>.fromOpaque(pointer).release() }
        }
        return status == 0 ? key : nil
    }()

    /// This thread's box, if it has one, borrowed: the slot's reference keeps it alive (a strong
    /// one would retain and release it on every call).
    @inline(__always)
    private static func box(in key: pthread_key_t) -> Unmanaged<Box>? {
        pthread_getspecific(key).map { Unmanaged<Box>.fromOpaque($0) }
    }

    /// Takes `node` out of the caller's hands as this thread's spare if it is plain, ended and
    /// referenced by nothing else, and the thread has no spare yet (`node` is then `nil`);
    /// otherwise leaves it. Called outside every lock: the caller then lets the node go, which
    /// may free it.
    @inline(__always)
    package static func offer(_ node: inout TimerNode?) {
        // Read through the optional: a local copy of the reference would make it look shared. The
        // state only once the node is known unshared: a fire in flight that holds it may write its
        // state under its shard's lock, which this thread does not hold (`isPlain` reads `let`s).
        guard node?.isPlain == true, isKnownUniquelyReferenced(&node), node?.state == .ended, let key = Self.key
        else { return }
        if let box = Self.box(in: key) {
            box._withUnsafeGuaranteedRef { if $0.node == nil { $0.node = node.take() } }
            return
        }
        let box = Box()
        box.node = node.take()
        let retained = Unmanaged.passRetained(box)
        if pthread_setspecific(key, retained.toOpaque()) != 0 { retained.release() }  // The node goes with it.
    }

    /// This thread's spare, taken (the caller owns it), or `nil`.
    @inline(__always)
    package static func take() -> TimerNode? {
        guard let key = Self.key, let box = Self.box(in: key) else { return nil }
        return box._withUnsafeGuaranteedRef { $0.node.take() }
    }
}
