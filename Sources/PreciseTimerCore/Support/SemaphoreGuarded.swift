import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A value guarded by a binary `DispatchSemaphore`, the registry lock the mission asks for.
///
/// Uncontended, `wait` and `signal` are one atomic operation each (no system call), beside a
/// relaxed store of ``isHeld``. Contended, a caller first spins a bounded while on ``isHeld`` (a
/// plain flag, read only): the registry's critical sections last well under a microsecond, and a
/// `wait` that reaches the kernel costs a futex sleep and a wake-up, several microseconds on both
/// threads. Two caller threads meet on one of 64 shards once in 64 calls, and sleeping there made
/// their CPU per call 29 % worse than one thread's (10 % with the spin; the same design in C:
/// about 8 %). The semaphore alone decides who holds the lock: the flag is a hint, so a holder
/// preempted mid-section costs a spinner at most ``spinLimit`` reads before it sleeps.
/// Callers must not run user code or a blocking libevent call inside `withLock`.
///
/// Debug builds know the owner, as Go's runtime locks do (`assertLockHeld`): taking the lock
/// again on the thread that holds it stops at once with a message instead of deadlocking, and
/// ``assertHeld()`` / ``assertNotHeld()`` check a function's precondition (no user code runs
/// with a shard's lock held). Release builds keep none of it.
package final class SemaphoreGuarded<Value>: @unchecked Sendable {
    // Invariant: `value` is read and written only between `semaphore.wait()` and `signal()`.
    // It lives behind a pointer rather than in a `var`: the semaphore already guarantees
    // exclusive access, and a stored `var` would pay a dynamic exclusivity check per call.
    private let semaphore = DispatchSemaphore(value: 1)
    private let value: UnsafeMutablePointer<Value>
    /// Set by the holder just after `wait` and cleared just before `signal`; read by a caller
    /// about to wait, as a hint that it would sleep (see the type's discussion).
    private let isHeld = Atomic<Bool>(false)
    /// Reads of ``isHeld`` a caller makes before waiting anyway: about a microsecond and a half
    /// on this project's machines, several times a registry call.
    private static var spinLimit: Int { 1_024 }
    #if DEBUG
        /// The thread holding the lock (`pthread_self`), 0 when free: written only by the holder.
        private let owner = Atomic<UInt>(0)
    #endif

    package init(_ value: Value) {
        self.value = .allocate(capacity: 1)
        self.value.initialize(to: value)
    }

    deinit {
        self.value.deinitialize(count: 1)
        self.value.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    package func withLock<Result: ~Copyable, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        #if DEBUG
            let thread = Self.currentThread
            precondition(
                self.owner.load(ordering: .relaxed) != thread,
                "SemaphoreGuarded: taken again on the thread that holds it (this would deadlock)")
        #endif
        if self.isHeld.load(ordering: .relaxed) {
            self.spinWhileHeld()
        }
        self.semaphore.wait()
        self.isHeld.store(true, ordering: .relaxed)
        #if DEBUG
            self.owner.store(thread, ordering: .relaxed)
        #endif
        defer {
            #if DEBUG
                self.owner.store(0, ordering: .relaxed)
            #endif
            self.isHeld.store(false, ordering: .relaxed)
            self.semaphore.signal()
        }
        return try body(&self.value.pointee)
    }

    /// Waits a bounded while for the holder to let go, without a system call.
    @inline(never)
    private func spinWhileHeld() {
        var spins = 0
        while spins < Self.spinLimit, self.isHeld.load(ordering: .relaxed) {
            spins += 1
        }
    }

    /// Debug builds: stops unless the calling thread holds the lock.
    @inline(__always)
    package func assertHeld(file: StaticString = #fileID, line: UInt = #line) {
        #if DEBUG
            precondition(
                self.owner.load(ordering: .relaxed) == Self.currentThread, "SemaphoreGuarded: lock not held",
                file: file, line: line)
        #endif
    }

    /// Debug builds: stops if the calling thread holds the lock (before user code runs).
    @inline(__always)
    package func assertNotHeld(file: StaticString = #fileID, line: UInt = #line) {
        #if DEBUG
            precondition(
                self.owner.load(ordering: .relaxed) != Self.currentThread,
                "SemaphoreGuarded: held while calling out (user code must never run under it)", file: file, line: line)
        #endif
    }

    #if DEBUG
        private static var currentThread: UInt { UInt(bitPattern: Int(bitPattern: UInt(pthread_self()))) }
    #endif
}
