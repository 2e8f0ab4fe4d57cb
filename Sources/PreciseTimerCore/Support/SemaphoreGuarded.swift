import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A value guarded by a semaphore, the registry lock the mission asks for: a `DispatchSemaphore`
/// with an atomic count of callers in front of it (a "benaphore").
///
/// ``callers`` counts the callers holding the lock or waiting for it. A caller that raises it
/// from 0 holds the lock at once; any other waits on the semaphore (created at 0), which the
/// holder signals once as it lets go when someone is waiting. Uncontended, a call is one atomic
/// add and one atomic subtract on this object's own cache line, which also holds the pointer to
/// the value: the semaphore itself (another allocation, another line) is touched only when
/// callers meet, so two caller threads move as few lines between their cores as they can.
///
/// Contended, a caller first spins a bounded while reading ``callers`` (read only): the
/// registry's critical sections last well under a microsecond, and a `wait` that reaches the
/// kernel costs a futex sleep and a wake-up, several microseconds on both threads. Two caller
/// threads meet on one of 64 shards once in 64 calls, and sleeping there made their CPU per call
/// 29 % worse than one thread's. The count alone decides who holds the lock: a holder preempted
/// mid-section costs a spinner at most ``spinLimit`` reads before it sleeps.
/// Callers must not run user code or a blocking libevent call inside `withLock`.
///
/// Debug builds know the owner, as Go's runtime locks do (`assertLockHeld`): taking the lock
/// again on the thread that holds it stops at once with a message instead of deadlocking, and
/// ``assertHeld()`` / ``assertNotHeld()`` check a function's precondition (no user code runs
/// with a shard's lock held). Release builds keep none of it.
package final class SemaphoreGuarded<Value>: @unchecked Sendable {
    // Invariant: `value` is read and written only by the caller holding the lock (the one whose
    // add found ``callers`` at 0, or whom the semaphore woke). It lives behind a pointer rather
    // than in a `var`: the lock already guarantees exclusive access, and a stored `var` would pay
    // a dynamic exclusivity check per call.
    /// Callers holding the lock (at most one) or waiting for it; 0: free.
    private let callers = Atomic<Int>(0)
    private let value: UnsafeMutablePointer<Value>
    /// Where callers that found the lock taken sleep: signalled once per waiter, by the holder
    /// letting go.
    private let semaphore = DispatchSemaphore(value: 0)
    /// Reads of ``callers`` a caller makes before waiting anyway: about a microsecond and a half
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
        if self.callers.load(ordering: .relaxed) != 0 {
            self.spinWhileHeld()
        }
        if self.callers.wrappingAdd(1, ordering: .acquiringAndReleasing).oldValue != 0 {
            self.semaphore.wait()
        }
        #if DEBUG
            self.owner.store(thread, ordering: .relaxed)
        #endif
        defer {
            #if DEBUG
                self.owner.store(0, ordering: .relaxed)
            #endif
            if self.callers.wrappingSubtract(1, ordering: .acquiringAndReleasing).oldValue != 1 {
                self.semaphore.signal()
            }
        }
        return try body(&self.value.pointee)
    }

    /// Waits a bounded while for the holder to let go, without a system call.
    @inline(never)
    private func spinWhileHeld() {
        var spins = 0
        while spins < Self.spinLimit, self.callers.load(ordering: .relaxed) != 0 {
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
