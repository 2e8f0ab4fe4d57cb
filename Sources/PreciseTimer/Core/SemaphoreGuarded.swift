import Dispatch

/// A value guarded by a binary `DispatchSemaphore`, the registry lock the mission asks for.
///
/// Uncontended, `wait` and `signal` are one atomic operation each (no system call).
/// Callers must not run user code or a blocking libevent call inside `withLock`.
package final class SemaphoreGuarded<Value>: @unchecked Sendable {
    // Invariant: `value` is read and written only between `semaphore.wait()` and `signal()`.
    private let semaphore = DispatchSemaphore(value: 1)
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        self.semaphore.wait()
        defer { self.semaphore.signal() }
        return try body(&self.value)
    }
}
