import Dispatch

/// A value guarded by a binary `DispatchSemaphore`, the registry lock the mission asks for.
///
/// Uncontended, `wait` and `signal` are one atomic operation each (no system call).
/// Callers must not run user code or a blocking libevent call inside `withLock`.
package final class SemaphoreGuarded<Value>: @unchecked Sendable {
    // Invariant: `value` is read and written only between `semaphore.wait()` and `signal()`.
    // It lives behind a pointer rather than in a `var`: the semaphore already guarantees
    // exclusive access, and a stored `var` would pay a dynamic exclusivity check per call.
    private let semaphore = DispatchSemaphore(value: 1)
    private let value: UnsafeMutablePointer<Value>

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
        self.semaphore.wait()
        defer { self.semaphore.signal() }
        return try body(&self.value.pointee)
    }
}
