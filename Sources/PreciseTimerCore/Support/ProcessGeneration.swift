import Glibc
import Synchronization

/// Counts the `fork()`s that led to this process, so a service can tell in one atomic load
/// whether it runs in the process that created it (`getpid()` is a system call on every call
/// since glibc 2.25; this is a `pthread_atfork` child handler bumping a counter).
enum ProcessGeneration {
    private static let forks = Atomic<UInt64>(0)

    /// Registered once, when the first service is made (``registeringCurrent()``).
    private static let registered: Bool = {
        pthread_atfork(nil, nil) { ProcessGeneration.forks.add(1, ordering: .relaxed) } == 0
    }()

    /// ``current()``, the handler registered first: what a service reads once, as it is made,
    /// so that its every call after reads the count alone (a lazy global's check per call was a
    /// call into the runtime on every schedule and cancel).
    static func registeringCurrent() -> UInt64 {
        _ = Self.registered
        return Self.current()
    }

    /// The current process's generation: 0 in the original process, +1 per `fork()` since
    /// ``registeringCurrent()`` first ran (before it, always 0: a service compares only readings
    /// taken after its own ``registeringCurrent()``).
    @inline(__always)
    static func current() -> UInt64 {
        Self.forks.load(ordering: .relaxed)
    }
}
