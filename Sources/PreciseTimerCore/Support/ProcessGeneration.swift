import Glibc
import Synchronization

/// Counts the `fork()`s that led to this process, so a service can tell in one atomic load
/// whether it runs in the process that created it (`getpid()` is a system call on every call
/// since glibc 2.25; this is a `pthread_atfork` child handler bumping a counter).
enum ProcessGeneration {
    private static let forks = Atomic<UInt64>(0)

    /// Registered once, the first time a service asks.
    private static let registered: Bool = {
        pthread_atfork(nil, nil) { ProcessGeneration.forks.add(1, ordering: .relaxed) } == 0
    }()

    /// The current process's generation: 0 in the original process, +1 per `fork()` since.
    static func current() -> UInt64 {
        _ = Self.registered
        return Self.forks.load(ordering: .relaxed)
    }
}
