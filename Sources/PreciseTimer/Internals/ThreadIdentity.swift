import Glibc
import Synchronization

/// A thread's identity as the engine's lifecycle records it: a number given to a thread the first
/// time it asks, kept in its thread-specific data, and never given to another thread of the
/// process.
///
/// `pthread_self()` is not one: glibc hands a new thread the cached stack, and so the
/// `pthread_t`, of one that exited, so a new thread would pass for a dead loop thread and touch
/// a base that another thread drives. A kernel thread ID is reused too, after the PID space wraps.
enum ThreadIdentity {
    /// The key whose value is the calling thread's number (none yet: `nil`). No destructor: the
    /// value is a number, not an allocation.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "ThreadIdentity: pthread_key_create failed (\(status))")
        return key
    }()

    /// The last number given; 0 is never one.
    private static let given = Atomic<UInt>(0)

    /// The calling thread's number.
    static var current: UInt {
        if let value = pthread_getspecific(Self.key) { return UInt(bitPattern: value) }
        let number = Self.given.add(1, ordering: .relaxed).newValue
        _ = pthread_setspecific(Self.key, UnsafeRawPointer(bitPattern: number))
        return number
    }
}
